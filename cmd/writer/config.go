package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/collab"
)

// config is what the writer reads from its environment besides app.Common:
// read in one place (loadConfig), checked once, every problem named.
type config struct {
	lambda bool
	// Lambda: the chat's $connect verifies tokens with the HTTP API's
	// issuer and audience (JWT_ISSUER, JWT_AUDIENCE).
	jwtIssuer, jwtAudience string
	// Elsewhere: DEV_AUTH_SECRET signs the dev tokens, CHAT_PUSH_SECRET
	// authenticates the notifier's pushes (SigV4), WRITER_ADDR is where it
	// listens (WRITER_ALLOWED_HOSTS: other names it answers to), ADMIN_ADDR
	// its admin endpoint.
	devSecret, pushSecret string
	addr                  string
	allowedHosts          []string
	adminAddr             string
	// Lambda: the WebSocket API's stage URL (CHAT_MANAGEMENT_ENDPOINT),
	// where a user's chat connections that API Gateway does not know are
	// found (GetConnection) when the user is at the open-connections bound.
	// Optional: without it none is dropped so.
	managementEndpoint string
	// hold is IDEMPOTENCY_HOLD; invites INVITES_PER_USER,
	// INVITES_PER_RESOURCE and INVITE_WINDOW.
	hold    time.Duration
	invites collab.InviteLimits
}

// loadConfig reads the writer's settings for Lambda or for a local run.
func loadConfig(lambda bool) (config, error) {
	c := config{
		lambda: lambda, jwtIssuer: os.Getenv("JWT_ISSUER"), jwtAudience: os.Getenv("JWT_AUDIENCE"),
		devSecret: os.Getenv("DEV_AUTH_SECRET"), pushSecret: os.Getenv("CHAT_PUSH_SECRET"),
		addr: app.Getenv("WRITER_ADDR", DefaultAddr), allowedHosts: app.AllowedHosts(), adminAddr: os.Getenv("ADMIN_ADDR"),
		managementEndpoint: os.Getenv("CHAT_MANAGEMENT_ENDPOINT"),
	}
	var errs []error
	var err error
	if c.invites, err = inviteLimits(); err != nil {
		errs = append(errs, err)
	}
	if c.hold, err = app.Duration("IDEMPOTENCY_HOLD", api.DefaultIdempotencyHold); err != nil {
		errs = append(errs, err)
	}
	switch {
	case lambda && (c.jwtIssuer == "" || c.jwtAudience == ""):
		errs = append(errs, errors.New("JWT_ISSUER and JWT_AUDIENCE are required in Lambda (the chat's $connect verifies tokens with them)"))
	case !lambda && c.devSecret == "":
		errs = append(errs, errors.New("DEV_AUTH_SECRET is required outside Lambda (it signs the local dev tokens)"))
	}
	if e := c.managementEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("CHAT_MANAGEMENT_ENDPOINT=%q: want a URL (https://<api id>.execute-api.<region>.amazonaws.com/<stage>)", e))
		}
	}
	if !lambda && c.pushSecret == "" {
		errs = append(errs, errors.New("CHAT_PUSH_SECRET is required outside Lambda (the local management endpoint authenticates the notifier's pushes with it, as API Gateway does with SigV4)"))
	}
	return c, errors.Join(errs...)
}

// inviteLimits reads INVITES_PER_USER, INVITES_PER_RESOURCE and
// INVITE_WINDOW (defaults collab.DefaultInviteLimits: 20, 10, 1h).
func inviteLimits() (collab.InviteLimits, error) {
	l := collab.DefaultInviteLimits
	for name, n := range map[string]*int{"INVITES_PER_USER": &l.PerUser, "INVITES_PER_RESOURCE": &l.PerResource} {
		if v := os.Getenv(name); v != "" {
			i, err := strconv.Atoi(v)
			if err != nil || i < 1 {
				return l, fmt.Errorf("%s=%q: want a positive integer", name, v)
			}
			*n = i
		}
	}
	if v := os.Getenv("INVITE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			return l, fmt.Errorf("INVITE_WINDOW=%q: want a duration of at least 1s (e.g. 1h)", v)
		}
		l.Window = d
	}
	return l, nil
}

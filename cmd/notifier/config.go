package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/notify"
)

// config is what the notifier reads from its environment besides
// app.Common: read in one place (loadConfig), checked once, every problem
// named.
type config struct {
	lambda bool
	// e-mail: MAIL_FROM (required to send through SES), SES in Lambda or
	// with MAIL_SES=true (SES_ENDPOINT, SES_CONFIGURATION_SET), else .eml
	// files; MAIL_HOLD and MAIL_SEND_TIMEOUT; links under APP_BASE_URL.
	mailFrom, sesEndpoint, sesConfigurationSet string
	ses                                        bool
	mailHold, sendTimeout                      time.Duration
	appBaseURL                                 string
	// domain events: EVENT_BUS_NAME (required in Lambda; without it, the
	// local outbox), EVENTBRIDGE_ENDPOINT, EVENTBRIDGE_MAX_BYTES.
	bus, eventBridgeEndpoint string
	eventMaxBytes            int
	// chat pushes: CHAT_PUSH_ENDPOINT (required in Lambda; locally the
	// writer at WRITER_ADDR), CHAT_PUSH_SECRET (locally: the stack's push
	// credentials, which the local writer verifies).
	pushEndpoint, pushSecret string
	localPush                bool
}

func loadConfig(lambda bool) (config, error) {
	c := config{
		lambda: lambda, mailFrom: os.Getenv("MAIL_FROM"), sesEndpoint: os.Getenv("SES_ENDPOINT"),
		sesConfigurationSet: os.Getenv("SES_CONFIGURATION_SET"), ses: lambda || os.Getenv("MAIL_SES") == "true",
		mailHold: notify.DefaultHold, sendTimeout: notify.DefaultSendTimeout,
		appBaseURL: app.Getenv("APP_BASE_URL", "http://localhost:8080"),
		bus:        os.Getenv("EVENT_BUS_NAME"), eventBridgeEndpoint: os.Getenv("EVENTBRIDGE_ENDPOINT"),
		pushEndpoint: os.Getenv("CHAT_PUSH_ENDPOINT"), pushSecret: os.Getenv("CHAT_PUSH_SECRET"),
	}
	var errs []error
	if c.ses && c.mailFrom == "" {
		errs = append(errs, errors.New("MAIL_FROM is required to send through SES (a verified identity)"))
	}
	for name, d := range map[string]*time.Duration{"MAIL_HOLD": &c.mailHold, "MAIL_SEND_TIMEOUT": &c.sendTimeout} {
		if v := os.Getenv(name); v != "" {
			var err error
			if *d, err = time.ParseDuration(v); err != nil || *d <= 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a positive duration (e.g. 30s)", name, v))
			}
		}
	}
	if c.sendTimeout >= c.mailHold {
		errs = append(errs, fmt.Errorf("MAIL_SEND_TIMEOUT (%s) must be shorter than MAIL_HOLD (%s), so a live worker is done before another may take over", c.sendTimeout, c.mailHold))
	}
	if lambda && c.bus == "" {
		errs = append(errs, errors.New("EVENT_BUS_NAME is required in Lambda"))
	}
	if v := os.Getenv("EVENTBRIDGE_MAX_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("EVENTBRIDGE_MAX_BYTES=%q: want a positive integer", v))
		}
		c.eventMaxBytes = n
	}
	switch {
	case c.pushEndpoint != "":
		if u, err := url.Parse(c.pushEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("CHAT_PUSH_ENDPOINT=%q: want a URL (https://<api id>.execute-api.<region>.amazonaws.com/<stage>)", c.pushEndpoint))
		}
	case lambda:
		errs = append(errs, errors.New("CHAT_PUSH_ENDPOINT is required in Lambda (the WebSocket API's stage URL)"))
	default: // the local writer implements the management endpoint
		c.pushEndpoint, c.localPush = app.LocalURL(app.Getenv("WRITER_ADDR", app.DefaultWriterAddr)), true
		if c.pushSecret == "" {
			errs = append(errs, errors.New("CHAT_PUSH_SECRET is required locally (the local writer's management endpoint verifies the pushes' SigV4 signatures with it; make run sets it)"))
		}
	}
	return c, errors.Join(errs...)
}

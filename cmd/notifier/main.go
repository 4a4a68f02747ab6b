package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/eventbus"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/push"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

const usage = `notifier turns the table's stream into side effects: domain events (EventBridge in AWS, the
local outbox otherwise), e-mails (SES v2, or .eml files) and chat pushes.

Usage:
  notifier                     consume the stream
  notifier resubmit FILE       hand the dead letters in FILE to the handler again ("table": the bookkeeping table's)

Environment: DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT (empty: AWS), EVENT_BUS_NAME, EVENTBRIDGE_ENDPOINT,
EVENTBRIDGE_MAX_BYTES, MAIL_FROM, SES_CONFIGURATION_SET, APP_BASE_URL, CHAT_PUSH_ENDPOINT, CHAT_PUSH_SECRET,
STREAM_*, ADMIN_ADDR, LOG_LEVEL (see the README's Configuration). resubmit uses make run's stack (table
search-room at http://127.0.0.1:8000) unless DYNAMODB_TABLE_NAME is set.
`

func main() {
	app.Help(usage)
	var defaulted string
	switch {
	case len(os.Args) > 1 && os.Args[1] == "resubmit":
		defaulted = app.LocalStackByDefault()
	case len(os.Args) > 1:
		fmt.Fprintf(os.Stderr, "notifier: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	c, err := app.LoadCommon()
	log := app.Logger(c, "notifier")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	if defaulted != "" {
		log.Info(defaulted)
	}
	if app.NothingToResubmit(log) {
		return
	}
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	from := os.Getenv("MAIL_FROM")
	var sender mail.Sender
	if app.InLambda() || os.Getenv("MAIL_SES") == "true" {
		if from == "" {
			app.Fatal(log, "bad configuration", errors.New("MAIL_FROM is required to send through SES (a verified identity)"))
		}
		sender = &mail.SES{Client: mail.NewSESClient(clients.AWS, os.Getenv("SES_ENDPOINT")), From: from, ConfigurationSet: os.Getenv("SES_CONFIGURATION_SET")}
	} else {
		dir := filepath.Join(c.LocalDir, "outbox", "mail")
		if err := os.MkdirAll(dir, 0o755); err != nil { // there from the start: the README lists it before any mail
			app.Fatal(log, "mail directory", err)
		}
		sender = &mail.EMLDir{Dir: dir, From: from}
		log.Info("e-mails go to .eml files", "dir", dir)
	}
	publisher, err := eventPublisher(c, clients, log)
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	app.EnsureBookkeeping(c, clients, log)
	st := store.New(clients.DB, c.Table)
	st.Bookkeeping = c.Bookkeeping
	dl := app.DeadLetters(c, clients, "notifier")
	hold, timeout, err := mailTimes()
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	n := &notify.Notifier{
		Publisher: publisher,
		Effects: &notify.Effects{
			Store: st, Mailer: sender, Now: time.Now, Logger: log, Hold: hold, SendTimeout: timeout,
			BaseURL: app.Getenv("APP_BASE_URL", "http://localhost:8080"),
		},
		Logger: log, DeadLetters: dl,
	}
	endpoint, err := chatEndpoint()
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	pushCfg, err := pushConfig(clients.AWS)
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	n.Chat = &notify.Chat{Store: st, Pusher: push.New(pushCfg, endpoint), Now: time.Now}
	log.Info("chat messages are pushed through the management endpoint", "endpoint", endpoint)
	app.ServeStream(c, clients, log, app.Consumer{Name: "notifier", Handler: n.Handle, DeadLetters: dl, Quarantine: st.Quarantine,
		Skip: stream.SkipNone})
}

// chatEndpoint is API Gateway's management endpoint for the chat's
// connections: CHAT_PUSH_ENDPOINT (in AWS the WebSocket API's stage URL,
// https://<api id>.execute-api.<region>.amazonaws.com/<stage>; required in
// Lambda), locally by default the writer at WRITER_ADDR, which implements
// it.
func chatEndpoint() (string, error) {
	if v := os.Getenv("CHAT_PUSH_ENDPOINT"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return "", fmt.Errorf("CHAT_PUSH_ENDPOINT=%q: want a URL (https://<api id>.execute-api.<region>.amazonaws.com/<stage>)", v)
		}
		return v, nil
	}
	if app.InLambda() {
		return "", errors.New("CHAT_PUSH_ENDPOINT is required in Lambda (the WebSocket API's stage URL)")
	}
	return app.LocalURL(app.Getenv("WRITER_ADDR", app.DefaultWriterAddr)), nil
}

// pushConfig is the AWS configuration the management client signs with:
// in Lambda, or with CHAT_PUSH_ENDPOINT set (a real WebSocket API), the
// usual credentials; locally the stack's push credentials (LocalPushKeyID
// and CHAT_PUSH_SECRET), which the local writer verifies.
func pushConfig(cfg aws.Config) (aws.Config, error) {
	if app.LambdaBuild || app.InLambda() || os.Getenv("CHAT_PUSH_ENDPOINT") != "" {
		return cfg, nil
	}
	secret := os.Getenv("CHAT_PUSH_SECRET")
	if secret == "" {
		return cfg, errors.New("CHAT_PUSH_SECRET is required locally (the local writer's management endpoint verifies the pushes' SigV4 signatures with it; make run sets it)")
	}
	cfg = cfg.Copy()
	cfg.Credentials = credentials.NewStaticCredentialsProvider(app.LocalPushKeyID, secret, "")
	return cfg, nil
}

// mailTimes reads MAIL_HOLD (how long a claimed send is reserved for its
// worker, default notify.DefaultHold) and MAIL_SEND_TIMEOUT (one send's
// bound, default notify.DefaultSendTimeout); the timeout must be shorter
// than the hold, so a live worker is done before another may take over.
func mailTimes() (hold, timeout time.Duration, err error) {
	hold, timeout = notify.DefaultHold, notify.DefaultSendTimeout
	for name, d := range map[string]*time.Duration{"MAIL_HOLD": &hold, "MAIL_SEND_TIMEOUT": &timeout} {
		if v := os.Getenv(name); v != "" {
			if *d, err = time.ParseDuration(v); err != nil || *d <= 0 {
				return 0, 0, fmt.Errorf("%s=%q: want a positive duration (e.g. 30s)", name, v)
			}
		}
	}
	if timeout >= hold {
		return 0, 0, fmt.Errorf("MAIL_SEND_TIMEOUT (%s) must be shorter than MAIL_HOLD (%s)", timeout, hold)
	}
	return hold, timeout, nil
}

// eventPublisher is EventBridge when a bus is named (required in Lambda),
// else the local outbox. Events that can never be published go to
// LOCAL_DIR/deadletters/events.jsonl locally; in Lambda the error log line
// carries them (alarm on it), as a function has no disk to keep them.
func eventPublisher(c app.Common, clients *ddb.Clients, log *slog.Logger) (notify.Publisher, error) {
	bus := os.Getenv("EVENT_BUS_NAME")
	if bus == "" {
		if app.InLambda() {
			return nil, errors.New("EVENT_BUS_NAME is required in Lambda")
		}
		path := filepath.Join(c.LocalDir, "outbox", "events.jsonl")
		log.Info("publishing domain events to the local outbox", "path", path)
		return &outbox.Outbox{Path: path}, nil
	}
	maxBytes := 0
	if v := os.Getenv("EVENTBRIDGE_MAX_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("EVENTBRIDGE_MAX_BYTES=%q: want a positive integer", v)
		}
		maxBytes = n
	}
	rejected := func(ctx context.Context, e events.Event, cause error) error { return nil } // logged by EventBridge
	if !app.InLambda() {
		dl := &outbox.Outbox{Path: filepath.Join(c.LocalDir, "deadletters", "events.jsonl")}
		rejected = func(ctx context.Context, e events.Event, cause error) error {
			return errors.Join(dl.Publish(ctx, []events.Event{e})...)
		}
	}
	log.Info("publishing domain events to EventBridge", "bus", bus)
	return &notify.EventBridge{
		Bus:      &eventbus.Publisher{Client: eventbus.NewClient(clients.AWS, os.Getenv("EVENTBRIDGE_ENDPOINT")), BusName: bus, MaxBytes: maxBytes, Logger: log},
		Rejected: rejected, Logger: log,
	}, nil
}

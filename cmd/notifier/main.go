package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
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
	"github.com/dynastream/dynastream/stream"
)

const usage = `notifier turns the table's stream into side effects: domain events (EventBridge in AWS, the
local outbox otherwise), e-mails (SES v2, or .eml files) and chat pushes.

Usage:
  notifier                     consume the stream
  notifier resubmit FILE       hand the dead letters in FILE to the handler again ("table": the bookkeeping table's)
  notifier redrive [QUEUE_URL]
                               hand the records an on-failure queue's messages name to the handler again

Environment: DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT (empty: AWS), EVENT_BUS_NAME, EVENTBRIDGE_ENDPOINT,
EVENTBRIDGE_MAX_BYTES, MAIL_FROM, SES_CONFIGURATION_SET, APP_BASE_URL, CHAT_PUSH_ENDPOINT, CHAT_PUSH_SECRET,
STREAM_*, ADMIN_ADDR, LOG_LEVEL (see docs/operations.md, Configuration). resubmit uses make run's stack (table
search-room at http://127.0.0.1:8000) unless DYNAMODB_TABLE_NAME is set.
`

func main() {
	app.Help(usage)
	var defaulted string
	switch {
	case len(os.Args) > 1 && (os.Args[1] == "resubmit" || os.Args[1] == "redrive"):
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
	cfg, err := loadConfig(app.LambdaBuild || app.InLambda())
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	clients, err := ddb.New(context.Background(), c.DB)
	if err != nil {
		app.Fatal(log, "clients", err)
	}
	var sender mail.Sender
	if cfg.ses || app.LambdaBuild { // a Lambda build leaves the .eml sink out (its size)
		sender = &mail.SES{Client: mail.NewSESClient(clients.AWS, cfg.sesEndpoint), From: cfg.mailFrom, ConfigurationSet: cfg.sesConfigurationSet}
	} else {
		dir := filepath.Join(c.LocalDir, "outbox", "mail")
		if err := os.MkdirAll(dir, 0o755); err != nil { // there from the start: the walkthrough lists it before any mail
			app.Fatal(log, "mail directory", err)
		}
		sender = &mail.EMLDir{Dir: dir, From: cfg.mailFrom}
		log.Info("e-mails go to .eml files", "dir", dir)
	}
	publisher := eventPublisher(c, cfg, clients, log)
	app.EnsureBookkeeping(c, clients, log)
	st := app.NewStore(c, clients)
	dl := app.DeadLetters(c, clients, "notifier")
	n := &notify.Notifier{
		Publisher: publisher,
		Effects: &notify.Effects{
			Store: st, Mailer: sender, Now: time.Now, Logger: log, Hold: cfg.mailHold, SendTimeout: cfg.sendTimeout,
			BaseURL: cfg.appBaseURL,
		},
		Logger: log, DeadLetters: dl,
	}
	n.Chat = &notify.Chat{Store: st, Pusher: push.New(pushConfig(clients.AWS, cfg), cfg.pushEndpoint), Now: time.Now}
	log.Info("chat messages are pushed through the management endpoint", "endpoint", cfg.pushEndpoint)
	app.ServeStream(c, clients, log, app.Consumer{Name: "notifier", Handler: n.Handle, DeadLetters: dl, Quarantine: st.Quarantine,
		Filter: notify.Filter(), Skip: stream.SkipNone})
}

// pushConfig is the AWS configuration the management client signs with:
// in Lambda, or with CHAT_PUSH_ENDPOINT set (a real WebSocket API), the
// usual credentials; locally the stack's push credentials (LocalPushKeyID
// and CHAT_PUSH_SECRET), which the local writer verifies.
func pushConfig(aw aws.Config, cfg config) aws.Config {
	if !cfg.localPush {
		return aw
	}
	aw = aw.Copy()
	aw.Credentials = credentials.NewStaticCredentialsProvider(app.LocalPushKeyID, cfg.pushSecret, "")
	return aw
}

// eventPublisher is EventBridge when a bus is named (required in Lambda),
// else the local outbox. Events that can never be published go to
// LOCAL_DIR/deadletters/events.jsonl locally; in Lambda the error log line
// carries them (alarm on it), as a function has no disk to keep them.
func eventPublisher(c app.Common, cfg config, clients *ddb.Clients, log *slog.Logger) notify.Publisher {
	if !app.LambdaBuild && cfg.bus == "" { // a Lambda build requires a bus and leaves the outbox out (its size)
		path := filepath.Join(c.LocalDir, "outbox", "events.jsonl")
		log.Info("publishing domain events to the local outbox", "path", path)
		return &outbox.Outbox{Path: path}
	}
	rejected := func(ctx context.Context, e events.Event, cause error) error { return nil } // logged by EventBridge
	if !app.LambdaBuild && !cfg.lambda {
		dl := &outbox.Outbox{Path: filepath.Join(c.LocalDir, "deadletters", "events.jsonl")}
		rejected = func(ctx context.Context, e events.Event, cause error) error {
			return errors.Join(dl.Publish(ctx, []events.Event{e})...)
		}
	}
	log.Info("publishing domain events to EventBridge", "bus", cfg.bus)
	return &notify.EventBridge{
		// InOrder: a failed chunk holds the later ones back, so that a key's
		// events are not out before an earlier one of its that comes again
		Bus: &eventbus.Publisher{Client: eventbus.NewClient(clients.AWS, cfg.eventBridgeEndpoint), BusName: cfg.bus, MaxBytes: cfg.eventMaxBytes,
			Logger: log, InOrder: true},
		Rejected: rejected, Logger: log,
	}
}

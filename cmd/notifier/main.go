// Command notifier turns the table's stream into side effects: one domain
// event per core change (to the local outbox, LOCAL_DIR/outbox/events.jsonl,
// for now; EventBridge comes behind the same Publisher seam), and the
// collaboration e-mails and in-app notifications. E-mails go through SES
// v2 in AWS and to .eml files in LOCAL_DIR/outbox/mail on the local stack.
//
// Environment (besides the common DYNAMODB_* and LOG_LEVEL): MAIL_FROM
// (the sender; required in Lambda), SES_CONFIGURATION_SET (optional),
// APP_BASE_URL (links in e-mails; default http://localhost:8080).
package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/mail"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
	"github.com/dynastream/dynastream/internal/store"
)

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func main() {
	c, err := app.LoadCommon()
	log := app.Logger(c, "notifier")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
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
		sender = &mail.EMLDir{Dir: dir, From: from}
		log.Info("e-mails go to .eml files", "dir", dir)
	}
	path := filepath.Join(c.LocalDir, "outbox", "events.jsonl")
	n := &notify.Notifier{
		Publisher: &outbox.Outbox{Path: path},
		Effects: &notify.Effects{
			Store: store.New(clients.DB, c.Table), Mailer: sender, Now: time.Now, Logger: log,
			BaseURL: getenv("APP_BASE_URL", "http://localhost:8080"),
		},
		Logger: log,
	}
	log.Info("publishing domain events to the local outbox", "path", path)
	app.ServeStream(c, log, "notifier", n.Handle)
}

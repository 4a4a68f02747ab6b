// Command notifier turns the table's stream into side effects: one domain
// event per core change, to the local outbox (LOCAL_DIR/outbox/events.jsonl)
// for now; EventBridge and SES come later behind the same Publisher seam.
package main

import (
	"path/filepath"

	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
)

func main() {
	c, err := app.LoadCommon()
	log := app.Logger(c, "notifier")
	if err != nil {
		app.Fatal(log, "bad configuration", err)
	}
	path := filepath.Join(c.LocalDir, "outbox", "events.jsonl")
	n := &notify.Notifier{Publisher: &outbox.Outbox{Path: path}, Logger: log}
	log.Info("publishing domain events to the local outbox", "path", path)
	app.ServeStream(c, log, "notifier", n.Handle)
}

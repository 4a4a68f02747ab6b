package eventbus_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/dynastream/dynastream/eventbus"
)

// A Publisher on a real EventBridge client (this example needs AWS and is
// compiled, not run).
func ExamplePublisher() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		slog.Error("aws config", "error", err)
		return
	}
	p := &eventbus.Publisher{
		Client:  eventbus.NewClient(cfg, ""), // SDK retries off: Publish retries
		BusName: "dynastream-domain",
		Logger:  slog.Default(),
	}
	errs := p.Publish(ctx, []eventbus.Entry{{
		Source:     "dynastream.collab",
		DetailType: "InviteAccepted",
		Detail:     []byte(`{"id":"5f1c…-0","occurredAt":"2026-01-02T15:04:05.000Z","version":1,"data":{}}`),
		Time:       time.Now(),
	}})
	for i, err := range errs {
		switch {
		case err == nil:
			// published
		case eventbus.IsPermanent(err):
			fmt.Println("dead-letter entry", i, err)
		default:
			fmt.Println("report entry", i, "as a batch item failure:", err)
		}
	}
}

// Entries are cut into calls of at most 10 entries and 256 KB; an entry
// over the limit on its own is refused without being sent.
func ExamplePublisher_Publish() {
	api := &stubAPI{}
	p := &eventbus.Publisher{Client: api, Logger: quiet()}
	var entries []eventbus.Entry
	for i := range 23 {
		entries = append(entries, entry(i))
	}
	entries = append(entries, sized(23, 300_000))

	errs := p.Publish(context.Background(), entries)
	for _, call := range api.calls {
		fmt.Println("call with", len(call), "entries")
	}
	var tooLarge *eventbus.TooLargeError
	if errors.As(errs[23], &tooLarge) {
		fmt.Println("too large:", tooLarge.Size, ">", tooLarge.Limit)
	}
	// Output:
	// call with 10 entries
	// call with 10 entries
	// call with 3 entries
	// too large: 300000 > 262144
}

// A stream consumer turns a record into a typed event whose id comes from
// the record, so that a redelivered record publishes the same event (the
// subscribers dedupe on the id).
func ExampleFromRecord() {
	type OrderPlaced struct {
		OrderID string `json:"orderId"`
	}
	rec := events.DynamoDBEventRecord{EventID: "7f3a", Change: events.DynamoDBStreamRecord{
		SequenceNumber:              "4200",
		ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Date(2026, 11, 26, 8, 30, 0, 0, time.UTC)},
	}}
	ev := eventbus.FromRecord(rec, 0, "shop.orders", "OrderPlaced", OrderPlaced{OrderID: "o-1"})
	entry, err := ev.Entry()
	if err != nil {
		fmt.Println("dead-letter:", err)
		return
	}
	fmt.Println(entry.Source, entry.DetailType)
	fmt.Println(string(entry.Detail))
	// Output:
	// shop.orders OrderPlaced
	// {"id":"7f3a-0","occurredAt":"2026-11-26T08:30:00.000Z","version":1,"sequenceNumber":"4200","changedAt":"2026-11-26T08:30:00.000000Z","data":{"orderId":"o-1"}}
}

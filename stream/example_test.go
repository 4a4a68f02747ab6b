package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/stream"
)

// ExampleRunner wires a Runner around a handler written for Lambda. The same
// handler is what a Lambda function passes to lambda.Start; here it runs
// against the table's stream from any process, with checkpoints in a table
// of their own and dead letters in a file. It needs a live endpoint, so it
// has no output to check.
func ExampleRunner() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// For DynamoDB Local, point both clients at it:
	//   dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String("http://127.0.0.1:8000") })
	db := dynamodb.NewFromConfig(cfg)
	streams := dynamodbstreams.NewFromConfig(cfg)

	table, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("rooms")})
	if err != nil {
		log.Fatal(err)
	}

	// The handler reports the records it could not handle; the runner
	// retries from the lowest of them, as Lambda does with
	// ReportBatchItemFailures on. Records can come again, so it must be
	// idempotent.
	handler := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		var resp events.DynamoDBEventResponse
		for _, rec := range ev.Records {
			c, err := stream.Decode(rec)
			if err == nil && !c.Derived() {
				err = project(ctx, c)
			}
			if err != nil {
				// Everything from this record on is retried: stop here.
				resp.BatchItemFailures = append(resp.BatchItemFailures,
					events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
				return resp, nil
			}
		}
		return resp, nil
	}

	checkpoints := &stream.TableCheckpoints{DB: db, Table: "rooms-checkpoints"}
	if err := checkpoints.CreateTable(ctx); err != nil {
		log.Fatal(err)
	}
	r := &stream.Runner{
		Config: stream.Config{
			StreamARN:  aws.ToString(table.Table.LatestStreamArn),
			Consumer:   "projector", // checkpoints are kept per consumer
			BatchSize:  100,
			MaxRetries: stream.Retries(5), // then dead letters; bisection (the default) leaves a poison record alone there
		},
		API:         streams,
		Checkpoints: checkpoints,
		DeadLetters: &stream.FileDeadLetters{Path: "deadletters/projector.jsonl"},
		OnBatch: func(s stream.BatchStats) {
			slog.Debug("batch", "records", s.Records, "attempt", s.Attempt, "failed", s.Failed, "iteratorAge", s.IteratorAge)
		},
	}
	// Run returns nil once ctx is done (Ctrl-C here), after the batch under
	// way is handled and checkpointed.
	if err := r.Run(ctx, handler); err != nil {
		log.Fatal(err)
	}
}

// project stands for the consumer's own work.
func project(ctx context.Context, c stream.Change) error { return nil }

func ExampleKindOf() {
	// A TTL deletion as DynamoDB Local delivers it: an event name the SDK
	// does not know, no userIdentity, only the old image.
	var ttl events.DynamoDBEventRecord
	err := json.Unmarshal([]byte(`{
		"eventID": "9c2ab4d5-56d3-4f6e-8f5b-1b1c2d3e4f50",
		"eventName": "UNKNOWN_TO_SDK_VERSION",
		"eventVersion": "1.1",
		"eventSource": "aws:dynamodb",
		"awsRegion": "ddblocal",
		"dynamodb": {
			"ApproximateCreationDateTime": 1767225600,
			"Keys": {"PK": {"S": "ROOM#r1"}, "SK": {"S": "INVITE#u9"}},
			"OldImage": {"PK": {"S": "ROOM#r1"}, "SK": {"S": "INVITE#u9"}, "itemType": {"S": "Invite"}, "ttl": {"N": "1767225000"}},
			"SequenceNumber": "000000000000000000042",
			"SizeBytes": 61,
			"StreamViewType": "NEW_AND_OLD_IMAGES"
		}
	}`), &ttl)
	if err != nil {
		panic(err)
	}

	// The same deletion from the service: REMOVE by the TTL service identity.
	service := ttl
	service.EventName = "REMOVE"
	service.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}

	// A user's DeleteItem.
	user := ttl
	user.EventName = "REMOVE"

	for _, r := range []events.DynamoDBEventRecord{ttl, service, user} {
		k, err := stream.KindOf(r)
		if err != nil {
			panic(err)
		}
		c, err := stream.Decode(r)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-22s -> %s %s %s\n", r.EventName, k, c.String("PK"), c.ItemType())
	}
	// Output:
	// UNKNOWN_TO_SDK_VERSION -> TTL_REMOVE ROOM#r1 Invite
	// REMOVE                 -> TTL_REMOVE ROOM#r1 Invite
	// REMOVE                 -> REMOVE ROOM#r1 Invite
}

// ExampleKeyed handles a batch's records concurrently by partition key,
// each key's records in order. The record of ROOM#b fails: its group stops
// there (ROOM#b's later record waits), ROOM#a runs to its end, and the
// response names the failed record, so Lambda — or a Runner — delivers
// again from it.
func ExampleKeyed() {
	record := func(seq, pk string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq,
			Keys:           map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk), "SK": events.NewStringAttribute(seq)},
		}}
	}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		record("101", "ROOM#a"), record("102", "ROOM#b"), record("103", "ROOM#a"), record("104", "ROOM#b"),
	}}

	var mu sync.Mutex
	handled := map[string][]string{}
	h := stream.Keyed{Key: stream.PartitionKey("PK"), Concurrency: 8}.Handler(
		stream.Each(func(ctx context.Context, r events.DynamoDBEventRecord) error {
			pk := r.Change.Keys["PK"].String()
			if r.Change.SequenceNumber == "102" {
				return errors.New("room b is unreachable")
			}
			mu.Lock()
			defer mu.Unlock()
			handled[pk] = append(handled[pk], r.Change.SequenceNumber)
			return nil
		}))

	resp, _ := h(context.Background(), batch)
	fmt.Println("ROOM#a:", handled["ROOM#a"])
	fmt.Println("ROOM#b:", handled["ROOM#b"])
	fmt.Println("retry from:", resp.BatchItemFailures[0].ItemIdentifier)
	// Output:
	// ROOM#a: [101 103]
	// ROOM#b: []
	// retry from: 102
}

// ExampleRunner_Health serves a Runner's health as a readiness probe would
// read it (503 when stuck) and pauses and resumes it. Pause returns once
// the handler calls under way have finished and their checkpoint is
// written; here none is under way.
func ExampleRunner_Health() {
	r := &stream.Runner{Config: stream.Config{
		StreamARN: "arn:aws:dynamodb:eu-central-1:123456789012:table/rooms/stream/2026-01-01T00:00:00.000",
		Consumer:  "projector",
		// Stuck: records waiting and the checkpoint still for this long.
		StuckAfter: 2 * time.Minute,
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		h := r.Health()
		if h.Status == stream.Stuck {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"status": h.Status, "reason": h.Reason})
	})
	// go r.Run(ctx, handler); go http.ListenAndServe("127.0.0.1:9101", mux)

	fmt.Println(r.Health().Status)
	if err := r.Pause(context.Background()); err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Health().Status)
	r.Resume()
	fmt.Println(r.Health().Status)
	// Output:
	// idle
	// paused
	// idle
}

// A handler reads both images of a change as its own type: before is nil
// for an insert, after nil for a removal.
func ExampleImages() {
	type order struct {
		Amount int `dynamodbav:"amount"`
	}
	rec := events.DynamoDBEventRecord{EventID: "ev-1", EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "1", Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ORDER#1")},
		OldImage: map[string]events.DynamoDBAttributeValue{"amount": events.NewNumberAttribute("1250")},
		NewImage: map[string]events.DynamoDBAttributeValue{"amount": events.NewNumberAttribute("1500")},
	}}
	c, err := stream.Decode(rec)
	if err != nil {
		panic(err)
	}
	before, after, err := stream.Images[order](c)
	if err != nil {
		panic(err)
	}
	fmt.Println("amount changed by", after.Amount-before.Amount)
	// Output: amount changed by 250
}

// A Gate holds back the stream's records of an item until the one that
// starts from the image a scan handed over: changes the scan already saw
// are not applied again, and the ones after it all are.
func ExampleGate() {
	img := func(qty string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("A"), "qty": events.NewNumberAttribute(qty)}
	}
	keys := map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("A")}
	change := func(seq, from, to string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq, Keys: keys, OldImage: img(from), NewImage: img(to)}}
	}
	g := stream.NewGate()
	g.Saw(keys, img("2")) // the scan read the item at qty 2
	for _, r := range []events.DynamoDBEventRecord{change("101", "1", "2"), change("102", "2", "3"), change("103", "3", "4")} {
		fmt.Println(r.Change.OldImage["qty"].Number(), "→", r.Change.NewImage["qty"].Number(), g.Pass(r))
	}
	// Output:
	// 1 → 2 false
	// 2 → 3 true
	// 3 → 4 true
}

// ExampleFanout puts a third consumer on a reader the projector already
// has, instead of a third reader on the stream: each branch gets its own
// records, retries its own failures and dead-letters its own poison. Here
// the audit branch fails once as a whole; it is handed the batch again
// within the same call, in halves (a whole failure names no record), the
// projection is not, and the reader sees no failure.
func ExampleFanout() {
	record := func(seq, pk string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventID: "id-" + seq, EventName: "INSERT", Change: events.DynamoDBStreamRecord{
			SequenceNumber: seq,
			Keys:           map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(pk)},
		}}
	}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record("101", "ROOM#a"), record("102", "ROOM#b")}}

	var projected, audited []string
	auditDown := true
	fan := &stream.Fanout{Branches: []stream.Branch{
		{Name: "projector", DeadLetters: &stream.MemoryDeadLetters{},
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				for _, r := range ev.Records {
					projected = append(projected, r.Change.SequenceNumber)
				}
				return events.DynamoDBEventResponse{}, nil
			}},
		{Name: "audit", DeadLetters: &stream.MemoryDeadLetters{},
			Handler: func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				if auditDown {
					auditDown = false
					return events.DynamoDBEventResponse{}, errors.New("audit store unreachable")
				}
				for _, r := range ev.Records {
					audited = append(audited, r.Change.SequenceNumber)
				}
				return events.DynamoDBEventResponse{}, nil
			}},
	}}
	h, err := fan.Handler() // a Runner's handler, or a Lambda function's
	if err != nil {
		log.Fatal(err)
	}
	resp, _ := h(context.Background(), batch)
	fmt.Println("failures the reader sees:", len(resp.BatchItemFailures))
	fmt.Println("projected:", projected)
	fmt.Println("audited:", audited)
	st := fan.Stats()
	fmt.Println("audit calls:", st[1].Calls, "failed:", st[1].FailedCalls)
	// Output:
	// failures the reader sees: 0
	// projected: [101 102]
	// audited: [101 102]
	// audit calls: 3 failed: 1
}

// A consumer with an effect per change (here a webhook) keeps it off
// Bootstrap's records, which stand for items that already existed: it
// derives its state from them and sends nothing. (The project's own
// convention: AWS documents no snapshot records on a stream.)
func ExampleIsSnapshot() {
	subscription := func(id string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("SUB#" + id), "SK": events.NewStringAttribute("META")}
	}
	existing := stream.SnapshotRecord(subscription("1"), subscription("1"), "arn:aws:dynamodb:us-east-1:1:table/subs/stream/x", time.Now())
	created := events.DynamoDBEventRecord{EventID: "e1", EventName: "INSERT", Change: events.DynamoDBStreamRecord{Keys: subscription("2"), NewImage: subscription("2")}}

	active := map[string]bool{}
	var webhooks []string
	handle := func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			pk := r.Change.Keys["PK"].String()
			active[pk] = true // state: from every record
			if !stream.IsSnapshot(r) {
				webhooks = append(webhooks, "subscribed "+pk) // effects: for changes only
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}
	_, _ = handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{existing, created}})
	fmt.Println(len(active), webhooks)
	// Output:
	// 2 [subscribed SUB#2]
}

package stream_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream"
)

// liveHeap is the Go heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A Fanout keeps nothing of a record once every branch is done with it:
// 60,000 records through two branches, one of which fails a record now and
// then (its batch comes again from that record, as the mapping would hand
// it over), leave the live heap where it was after the first 10,000. Each
// batch's strings share one 4 KB block, as the SDK's decoding arena makes
// a GetRecords page's (smithy-go's StringArena): a record remembered
// keeps its whole block (issue 52). AWS documents nothing here: a Fanout
// is this library's (Lambda gives each consumer a mapping of its own),
// and a function's memory is the function's.
func TestFanoutHeapStaysFlat(t *testing.T) {
	var failed int
	fan := &stream.Fanout{Branches: []stream.Branch{
		{Name: "projection", DeadLetters: &stream.MemoryDeadLetters{}, Skip: stream.SkipNone,
			Handler: func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				return events.DynamoDBEventResponse{}, nil
			}},
		{Name: "audit", DeadLetters: &stream.MemoryDeadLetters{}, Skip: stream.SkipNone,
			Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				for _, r := range ev.Records {
					// every 997th record fails once
					if n := seqNumber(r.Change.SequenceNumber); n%997 == 0 && failed < n/997+1 {
						failed = n/997 + 1
						return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}}, nil
					}
				}
				return events.DynamoDBEventResponse{}, nil
			}},
	}}
	h, err := fan.Handler()
	if err != nil {
		t.Fatal(err)
	}
	const batch = 100
	send := func(from, to int) {
		for b := from; b < to; b += batch {
			block := make([]byte, 0, 4096)
			str := func(s string) string { // a string in the batch's block
				at := len(block)
				block = append(block, s...)
				return unsafe.String(&block[at], len(s))
			}
			recs := make([]events.DynamoDBEventRecord, 0, batch)
			for i := b; i < b+batch; i++ {
				recs = append(recs, events.DynamoDBEventRecord{EventID: str(fmt.Sprintf("ev-%08d", i)), EventName: "INSERT",
					Change: events.DynamoDBStreamRecord{SequenceNumber: str(fmt.Sprintf("%021d", i)),
						Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute(str(fmt.Sprintf("ITEM#%d", i)))}}})
			}
			for len(recs) > 0 {
				resp, err := h(context.Background(), events.DynamoDBEvent{Records: recs})
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.BatchItemFailures) == 0 {
					break
				}
				at := resp.BatchItemFailures[0].ItemIdentifier
				for len(recs) > 0 && recs[0].Change.SequenceNumber != at {
					recs = recs[1:]
				}
			}
		}
	}
	send(0, 10_000)
	warm := liveHeap()
	send(10_000, 60_000)
	grown := int64(liveHeap()) - int64(warm)
	t.Logf("live heap after 10,000 records %d bytes, after 60,000 %+d", warm, grown)
	if grown > 256<<10 {
		t.Errorf("the live heap grew %d bytes over 50,000 records: a Fanout keeps what it is done with", grown)
	}
	for _, s := range fan.Stats() {
		if s.Handled != 60_000 {
			t.Errorf("branch %s handled %d records, want 60,000", s.Name, s.Handled)
		}
	}
	if failed < 60 {
		t.Errorf("the audit branch failed %d times, want a failure every 997 records", failed)
	}
}

func seqNumber(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

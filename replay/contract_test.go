package replay_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/replay"
)

func batchOf(seqs ...string) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for _, s := range seqs {
		r := events.DynamoDBEventRecord{EventID: "ev-" + s, EventName: "INSERT"}
		r.Change.SequenceNumber = s
		r.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("K#" + s)}
		out = append(out, r)
	}
	return out
}

func TestCheckResponse(t *testing.T) {
	batch := batchOf("100", "200")
	failing := errors.New("boom")
	for _, c := range []struct {
		name     string
		response string
		err      error
		rule     string // "" = as meant
	}{
		{"no response", ``, nil, ""},
		{"null", `null`, nil, ""},
		{"empty object", `{}`, nil, ""},
		{"null list", `{"batchItemFailures":null}`, nil, ""},
		{"empty list", `{"batchItemFailures":[]}`, nil, ""},
		{"one failure", `{"batchItemFailures":[{"itemIdentifier":"200"}]}`, nil, ""},
		{"two failures", `{"batchItemFailures":[{"itemIdentifier":"200"},{"itemIdentifier":"100"}]}`, nil, ""},
		{"error alone", `{"batchItemFailures":null}`, failing, ""},
		{"error with failures", `{"batchItemFailures":[{"itemIdentifier":"200"}]}`, failing, replay.RuleErrorWithFailures},
		{"misspelled list", `{"batchItemFailure":[{"itemIdentifier":"200"}]}`, nil, replay.RuleUnknownMember},
		{"capitalised list", `{"BatchItemFailures":[{"itemIdentifier":"200"}]}`, nil, replay.RuleUnknownMember},
		{"not an object", `[{"itemIdentifier":"200"}]`, nil, replay.RuleMalformed},
		{"list is an object", `{"batchItemFailures":{"itemIdentifier":"200"}}`, nil, replay.RuleMalformed},
		{"misspelled key", `{"batchItemFailures":[{"itemIdentifer":"200"}]}`, nil, replay.RuleBadIdentifierKey},
		{"null identifier", `{"batchItemFailures":[{"itemIdentifier":null}]}`, nil, replay.RuleBadIdentifierKey},
		{"empty identifier", `{"batchItemFailures":[{"itemIdentifier":""}]}`, nil, replay.RuleEmptyIdentifier},
		{"eventID", `{"batchItemFailures":[{"itemIdentifier":"ev-200"}]}`, nil, replay.RuleUnknownIdentifier},
		{"other batch", `{"batchItemFailures":[{"itemIdentifier":"300"}]}`, nil, replay.RuleUnknownIdentifier},
		{"number", `{"batchItemFailures":[{"itemIdentifier":200}]}`, nil, replay.RuleUnknownIdentifier},
	} {
		err := replay.CheckResponse(batch, []byte(c.response), c.err)
		var ce *replay.ContractError
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.rule != "" && (!errors.As(err, &ce) || ce.Rule != c.rule):
			t.Errorf("%s: %v, want rule %s", c.name, err, c.rule)
		case c.rule != "" && (!strings.Contains(err.Error(), "Lambda") || !strings.Contains(err.Error(), "https://docs.aws.amazon.com/")):
			t.Errorf("%s: the message does not say what Lambda does and where that is written: %v", c.name, err)
		}
	}
}

// Deliver refuses a response Lambda would misread; with SkipContractCheck
// it reads it as Lambda does (an eventID reported: the whole batch again,
// until the retries run out and the batch is dead-lettered).
func TestDeliverChecksTheContract(t *testing.T) {
	ev := events.DynamoDBEvent{Records: batchOf("100", "200", "300")}
	calls := 0
	eventIDs := func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		calls++
		return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[len(ev.Records)-1].EventID}}}, nil
	}
	_, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: eventIDs}, replay.AsCaptured)
	var ce *replay.ContractError
	if !errors.As(err, &ce) || ce.Rule != replay.RuleUnknownIdentifier || calls != 1 {
		t.Fatalf("%d calls, %v", calls, err)
	}
	calls = 0
	s := replay.AsCaptured
	s.SkipContractCheck = true
	st, err := replay.Deliver(context.Background(), ev, replay.Target{Handler: eventIDs, OnFailure: replay.OnFailure{NoBisect: true}}, s)
	if err != nil || st.RecordsDelivered != 3*calls || calls != 4 || len(st.DeadLetters) != 1 ||
		len(st.DeadLetters[0].Event.Records) != 3 || !strings.Contains(st.DeadLetters[0].Error, `item "ev-300", which is not in the batch`) {
		t.Fatalf("without the check: %d calls, %+v, %v", calls, st, err)
	}
}

func ExampleCheckResponse_eventID() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailures":[{"itemIdentifier":"ev-200"}]}`), nil)
	fmt.Println(err.(*replay.ContractError).Rule)
	fmt.Println(err.(*replay.ContractError).Detail)
	// Output:
	// unknown-identifier
	// batchItemFailures[0].itemIdentifier "ev-200" is a record's eventID; Lambda wants its dynamodb.SequenceNumber
}

func ExampleCheckResponse_errorWithFailures() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailures":[{"itemIdentifier":"200"}]}`), errors.New("record 200 failed"))
	fmt.Println(err.(*replay.ContractError).Rule)
	// Output: error-with-failures
}

func ExampleCheckResponse_misspelledMember() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailure":[{"itemIdentifier":"200"}]}`), nil)
	fmt.Println(err.(*replay.ContractError).Rule)
	fmt.Println(err.(*replay.ContractError).Lambda)
	// Output:
	// unknown-member
	// Lambda finds no batchItemFailures and treats the whole batch as a success: the checkpoint moves past it and the records meant to be retried are never delivered again
}

func ExampleCheckResponse_misspelledKey() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailures":[{"itemIdentifer":"200"}]}`), nil)
	fmt.Println(err.(*replay.ContractError).Rule)
	// Output: bad-identifier-key
}

func ExampleCheckResponse_emptyIdentifier() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailures":[{"itemIdentifier":""}]}`), nil)
	fmt.Println(err.(*replay.ContractError).Rule)
	// Output: empty-identifier
}

func ExampleCheckResponse_malformed() {
	batch := batchOf("100", "200")
	err := replay.CheckResponse(batch, []byte(`{"batchItemFailures":{"itemIdentifier":"200"}}`), nil)
	fmt.Println(err.(*replay.ContractError).Rule)
	// Output: malformed
}

func ExampleCheckResponse_asMeant() {
	batch := batchOf("100", "200")
	fmt.Println(replay.CheckResponse(batch, []byte(`{"batchItemFailures":[{"itemIdentifier":"200"}]}`), nil))
	fmt.Println(replay.CheckResponse(batch, nil, errors.New("the whole batch failed")))
	// Output:
	// <nil>
	// <nil>
}

package events_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/internal/events"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/stream"
)

// FuzzChangeMeaning: whatever a stream record holds — any item type, any
// attribute of any type, missing keys — decoding it and asking what it
// means (the projector's effects and counts, the notifier's events) never
// panics; it either means something or is an error. Seeds: the Lambda
// fixtures, with each item type the consumers know.
func FuzzChangeMeaning(f *testing.F) {
	files, _ := filepath.Glob("../../attr/testdata/lambda/*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var ev lambdaevents.DynamoDBEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			f.Fatal(err)
		}
		for _, r := range ev.Records {
			rb, _ := json.Marshal(r)
			f.Add(rb)
		}
	}
	for _, typ := range []string{"Room", "Member", "Criteria", "Listing", "Location", "Resource", "CollaborationInvite",
		"Collaborator", "Comment", "Reaction", "CombinedCriteria", "Compatibility", "Activity", "ReactionCounts"} {
		for _, name := range []string{"INSERT", "MODIFY", "REMOVE"} {
			f.Add([]byte(`{"eventID":"e","eventName":"` + name + `","dynamodb":{"SequenceNumber":"1","Keys":{"PK":{"S":"ROOM#r"},"SK":{"S":"X"}},` +
				`"NewImage":{"PK":{"S":"ROOM#r"},"SK":{"S":"X"},"itemType":{"S":"` + typ + `"},"roomId":{"N":"1"},"criteria":{"S":"x"}},` +
				`"OldImage":{"itemType":{"S":"` + typ + `"},"userId":{"L":[]}}}}`))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r lambdaevents.DynamoDBEventRecord
		if err := attr.UnmarshalJSON(data, &r); err != nil {
			return // json.Unmarshal panics on some of these (see attr.UnmarshalJSON)
		}
		_ = stream.PartitionKey("PK")(r)
		_ = stream.ItemKey(r)
		c, err := stream.Decode(r)
		if err != nil {
			return
		}
		_, _, _ = projections.EffectsOf(c)
		_, _, _ = projections.CountChangeOf(c)
		pc, err := notify.ToChange(r)
		if err != nil {
			return
		}
		evs, err := events.Map(pc)
		if err == nil {
			for _, e := range evs {
				if e.ID == "" || e.DetailType == "" {
					t.Fatalf("event without id or type: %+v", e)
				}
				if _, err := json.Marshal(e); err != nil {
					t.Fatalf("event does not encode: %v", err)
				}
			}
		}
	})
}

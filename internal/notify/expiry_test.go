package notify_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/outbox"
)

// A TTL removal of a pending invite is an InviteExpired event, in the
// service's record shape (REMOVE by dynamodb.amazonaws.com) and in
// DynamoDB Local's (an unknown event name, no identity); a delete by hand of
// the same invite, or the TTL removal of an answered one, is not.
func TestInviteExpiredFromTTLRemoval(t *testing.T) {
	s := lambdaevents.NewStringAttribute
	invite := func(status string) map[string]lambdaevents.DynamoDBAttributeValue {
		return map[string]lambdaevents.DynamoDBAttributeValue{
			"PK": s("RESOURCE#GOAL#g1"), "SK": s("INVITE#i1"), "itemType": s("CollaborationInvite"),
			"inviteId": s("i1"), "inviterId": s("alice"), "inviteeId": s("bob"), "resourceType": s("goal"), "resourceId": s("g1"),
			"status": s(status), "expiresAt": s("2026-02-01T00:00:00.000Z"), "createdAt": s("2026-01-02T00:00:00.000Z"),
			"ttl": lambdaevents.NewNumberAttribute("1769904000"),
		}
	}
	rec := func(seq, name string, id *lambdaevents.DynamoDBUserIdentity, status string) lambdaevents.DynamoDBEventRecord {
		return lambdaevents.DynamoDBEventRecord{EventID: "ev-" + seq, EventName: name, UserIdentity: id, Change: lambdaevents.DynamoDBStreamRecord{
			SequenceNumber:              seq,
			ApproximateCreationDateTime: lambdaevents.SecondsEpochTime{Time: time.Date(2026, 2, 1, 0, 5, 0, 0, time.UTC)},
			Keys:                        map[string]lambdaevents.DynamoDBAttributeValue{"PK": s("RESOURCE#GOAL#g1"), "SK": s("INVITE#i1")},
			OldImage:                    invite(status),
		}}
	}
	ttl := &lambdaevents.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	n := &notify.Notifier{Publisher: &outbox.Outbox{Path: path}}
	resp, err := n.Handle(context.Background(), lambdaevents.DynamoDBEvent{Records: []lambdaevents.DynamoDBEventRecord{
		rec("001", "REMOVE", ttl, "pending"),                 // the service's TTL delete
		rec("002", "UNKNOWN_TO_SDK_VERSION", nil, "pending"), // DynamoDB Local's
		rec("003", "REMOVE", nil, "pending"),                 // a delete by hand: not an expiry
		rec("004", "REMOVE", ttl, "accepted"),                // an answered invite's cleanup
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handle: %v %+v", err, resp)
	}
	evs, err := outbox.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.SequenceNumber+" "+e.DetailType)
	}
	want := []string{"001 InviteExpired", "002 InviteExpired"}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

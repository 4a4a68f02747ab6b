package lambdatest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/ddbtest"
	"github.com/dynastream/dynastream/internal/runtimeapi"
	"github.com/dynastream/dynastream/stream"
)

// putEvents answers PutEvents with an id per entry.
func putEvents(target string, body []byte) (int, string) {
	var req struct{ Entries []json.RawMessage }
	if target != "AWSEvents.PutEvents" || json.Unmarshal(body, &req) != nil {
		return 400, `{"__type":"ValidationException","message":"not PutEvents"}`
	}
	var ids []string
	for i := range req.Entries {
		ids = append(ids, fmt.Sprintf(`{"EventId":"ev-%d"}`, i))
	}
	return 200, `{"FailedEntryCount":0,"Entries":[` + strings.Join(ids, ",") + `]}`
}

// detailTypes lists the entries PutEvents got, by DetailType.
func detailTypes(t *testing.T, reqs []fakeRequest) (map[string]int, []string) {
	t.Helper()
	n := map[string]int{}
	var details []string
	for _, r := range reqs {
		var req struct {
			Entries []struct{ DetailType, Detail, Source, EventBusName string }
		}
		if r.Target != "AWSEvents.PutEvents" || json.Unmarshal(r.Body, &req) != nil {
			t.Errorf("EventBridge got %s %q: %s", r.Method, r.Target, r.Body)
			continue
		}
		for _, e := range req.Entries {
			if e.EventBusName != "bus" || !strings.HasPrefix(e.Source, "dynastream.") {
				t.Errorf("entry %+v", e)
			}
			n[e.DetailType]++
			details = append(details, e.Detail)
		}
	}
	return n, details
}

// The projector and the notifier under Lambda, on the stream of what the
// real writer wrote: derived items in DynamoDB Local, domain events to
// EventBridge and the invite to SES (fakes that check the wire), both
// shapes of TTL deletion, and poison records isolated, not failing the
// invocation.
func TestConsumerBootstraps(t *testing.T) {
	ctx := context.Background()
	c, table, arn := ddbtest.Table(t)
	bk := ddbtest.Bookkeeping(t, c, table)
	w, _ := start(t, "writer", writerEnv(table, bk))
	alice, bob := claims("alice", "alice@example.com"), claims("bob", "bob@example.com")
	call(t, w, "PUT", "/me/profile", "", alice, `{"name":"Alice","email":"alice@example.com"}`, 200)
	call(t, w, "PUT", "/me/profile", "", bob, `{"name":"Bob","email":"bob@example.com"}`, 200)
	_, room := call(t, w, "POST", "/rooms", "", alice, `{"name":"Flat","searchType":"rent","context":{"combineMode":"strict"}}`, 201)
	roomID := room["roomId"].(string)
	call(t, w, "POST", "/rooms/"+roomID+"/members", "", alice, `{"userId":"bob"}`, 201)
	call(t, w, "PUT", "/rooms/"+roomID+"/criteria", "", alice, `{"criteria":{"locations":["Zurich"],"priceMax":3000}}`, 201)
	call(t, w, "PUT", "/rooms/"+roomID+"/criteria", "", bob, `{"criteria":{"locations":["Zurich","Basel"],"priceMax":3500}}`, 201)
	_, goal := call(t, w, "POST", "/resources", "", alice, `{"resourceType":"goal","title":"Run a marathon"}`, 201)
	call(t, w, "POST", "/resources/goal/"+goal["resourceId"].(string)+"/invites", "", alice, `{"inviteeId":"bob","message":"Join me"}`, 201)
	ev := streamEvent(t, c, arn)
	if len(ev.Records) < 8 {
		t.Fatalf("%d stream records", len(ev.Records))
	}

	bus := newFake(t, "events", putEvents)
	ses := newFake(t, "ses", func(string, []byte) (int, string) { return 200, `{"MessageId":"m-1"}` })
	proj, pinit := start(t, "projector", env(table, bk))
	notif, ninit := start(t, "notifier", env(table, bk, "EVENT_BUS_NAME=bus", "MAIL_FROM=noreply@example.com", "CHAT_PUSH_ENDPOINT=http://127.0.0.1:1/dev",
		"AWS_ENDPOINT_URL_EVENTBRIDGE="+bus.srv.URL, "AWS_ENDPOINT_URL_SESV2="+ses.srv.URL))
	t.Logf("init: projector %s, notifier %s", pinit.Round(time.Millisecond), ninit.Round(time.Millisecond))

	if resp := batchResponse(t, proj.Invoke(payload(t, ev), 60*time.Second)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("projector failures %v\n%s", resp.BatchItemFailures, strings.Join(proj.Logs(), "\n"))
	}
	_, comb := call(t, w, "GET", "/rooms/"+roomID+"/combined-criteria", "", bob, "", 200)
	if b, _ := json.Marshal(comb["criteria"]); !strings.Contains(string(b), "Zurich") || strings.Contains(string(b), "Basel") {
		t.Errorf("combined criteria %s", b)
	}
	if resp := batchResponse(t, notif.Invoke(payload(t, ev), 60*time.Second)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("notifier failures %v\n%s", resp.BatchItemFailures, strings.Join(notif.Logs(), "\n"))
	}
	types, _ := detailTypes(t, bus.all())
	for _, want := range []string{"RoomCreated", "MemberJoined", "CriteriaUpdated", "InviteCreated", "ProfileUpdated"} {
		if types[want] == 0 {
			t.Errorf("no %s published: %v", want, types)
		}
	}
	mails := ses.all()
	if len(mails) != 1 || mails[0].Path != "/v2/email/outbound-emails" || !strings.Contains(string(mails[0].Body), "bob@example.com") {
		t.Errorf("SES requests %+v", mails)
	}

	// Both shapes of a TTL deletion of the pending invite: the service's
	// (REMOVE by dynamodb.amazonaws.com) and DynamoDB Local's.
	var invite events.DynamoDBEventRecord
	for _, r := range ev.Records {
		if it, ok := r.Change.NewImage["itemType"]; ok && it.String() == "CollaborationInvite" && r.EventName == "INSERT" {
			invite = r
		}
	}
	if invite.EventID == "" {
		t.Fatal("no invite record in the stream")
	}
	ttl := func(seq, name string, service bool) events.DynamoDBEventRecord {
		r := invite
		r.EventID, r.EventName = "ttl-"+seq, name
		r.Change.SequenceNumber, r.Change.OldImage, r.Change.NewImage = seq, invite.Change.NewImage, nil
		if service {
			r.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
		}
		return r
	}
	ttlEv := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{ttl("900000000000000000001", "REMOVE", true), ttl("900000000000000000002", "UNKNOWN_TO_SDK_VERSION", false)}}
	before := len(bus.all())
	if resp := batchResponse(t, notif.Invoke(payload(t, ttlEv), 30*time.Second)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("notifier TTL failures %v", resp.BatchItemFailures)
	}
	if resp := batchResponse(t, proj.Invoke(payload(t, ttlEv), 30*time.Second)); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("projector TTL failures %v", resp.BatchItemFailures)
	}
	if types, _ := detailTypes(t, bus.all()[before:]); types["InviteExpired"] != 2 {
		t.Errorf("after the TTL deletions: %v, want InviteExpired twice", types)
	}

	// Poison: an attribute value aws-lambda-go cannot decode ({}), and a
	// record without keys whose image names no room. Each is dead-lettered
	// with a log line; the good record beside them is handled; nothing
	// fails the invocation, nothing is published about nobody.
	good := ev.Records[0]
	good.EventID, good.Change.SequenceNumber = "good", "910000000000000000001"
	goodJSON := payload(t, good)
	empty := strings.Replace(string(goodJSON), `"SequenceNumber":"910000000000000000001"`, `"SequenceNumber":"910000000000000000002"`, 1)
	empty = strings.Replace(empty, `"eventID":"good"`, `"eventID":"empty-value"`, 1)
	empty = strings.Replace(empty, `"NewImage":{`, `"NewImage":{"bad":{},`, 1)
	noKeys := `{"eventID":"no-keys","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"eu-west-1",
		"eventSourceARN":"` + arn + `","dynamodb":{"ApproximateCreationDateTime":1795241100,"NewImage":{"itemType":{"S":"Criteria"},"timestamp":{"S":"2026-11-23T00:00:00.000Z"},"criteria":{"M":{}}},
		"SequenceNumber":"910000000000000000003","SizeBytes":50,"StreamViewType":"NEW_AND_OLD_IMAGES"}}`
	poison := []byte(`{"Records":[` + string(goodJSON) + `,` + empty + `,` + noKeys + `]}`)
	before = len(bus.all())
	for name, f := range map[string]*runtimeapi.Function{"projector": proj, "notifier": notif} {
		if resp := batchResponse(t, f.Invoke(poison, 30*time.Second)); len(resp.BatchItemFailures) > 0 {
			t.Errorf("%s: poison failed %v", name, resp.BatchItemFailures)
		}
		dls, err := (&stream.TableDeadLetters{DB: c.DB, Table: bk}).List(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		var firsts []string
		for _, d := range dls {
			firsts = append(firsts, d.FirstSequenceNumber)
		}
		if strings.Join(firsts, ",") != "910000000000000000002,910000000000000000003" && strings.Join(firsts, ",") != "910000000000000000003,910000000000000000002" {
			t.Errorf("%s dead letters %v", name, firsts)
		}
		for _, id := range []string{"empty-value", "no-keys"} {
			if len(f.WaitLogs(5*time.Second, 1, `"level":"ERROR"`, id)) == 0 {
				t.Errorf("%s: no error logged for %s", name, id)
			}
		}
	}
	for _, f := range []*runtimeapi.Function{proj, notif} {
		f.WaitLogs(5*time.Second, 2, `"DeadLettered":1`)
		if len(emfLines(f, `"ColdStart":1`)) != 1 || len(emfLines(f, `"Records":2`, `"FailedRecords":0`, `"IteratorAge"`)) < 1 || len(emfLines(f, `"DeadLettered":1`)) != 2 {
			t.Errorf("consumer metrics missing:\n%s", strings.Join(emfLines(f), "\n"))
		}
	}
	checkAlarmedMetrics(t, "dynastream", map[string]*runtimeapi.Function{"projector": proj, "notifier": notif})
	_, details := detailTypes(t, bus.all()[before:])
	for _, d := range details {
		if strings.Contains(d, `"roomId":""`) || strings.Contains(d, `"userId":""`) {
			t.Errorf("published an event about nobody: %s", d)
		}
	}
}

package lambdatest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/ddbtest"
)

// A 10,000-record batch (12 MB: twice what Lambda hands a function at
// once, 6 MB; a bound on what the decoding and the handler must hold): with a deadline it cannot meet, the projector
// still answers before it, acknowledging what it did and reporting the
// rest; with time enough it handles all. Its memory after the batch is
// reported.
func TestProjectorBigBatchAndDeadline(t *testing.T) {
	c, table, arn := ddbtest.Table(t)
	bk := ddbtest.Bookkeeping(t, c, table)
	w, _ := start(t, "writer", writerEnv(table, bk))
	alice := claims("alice", "alice@example.com")
	_, room := call(t, w, "POST", "/rooms", "", alice, `{"name":"Flat","searchType":"rent"}`, 201)
	roomID := room["roomId"].(string)
	_, l := call(t, w, "POST", "/rooms/"+roomID+"/listings", "", alice, `{"sourceBrand":"homegate","externalId":"HG-1","title":"3.5 rooms","location":"Zurich","price":2800}`, 201)
	listingID := l["listingId"].(string)
	var listing events.DynamoDBEventRecord
	for _, r := range streamEvent(t, c, arn).Records {
		if it, ok := r.Change.NewImage["itemType"]; ok && it.String() == "Listing" {
			listing = r
		}
	}
	if listing.EventID == "" {
		t.Fatal("no listing record")
	}
	// 10,000 listings pinned in 20 rooms, each record of the real shape.
	rooms := []string{roomID}
	for len(rooms) < 20 {
		_, r := call(t, w, "POST", "/rooms", "", alice, `{"name":"Flat","searchType":"rent"}`, 201)
		rooms = append(rooms, r["roomId"].(string))
	}
	template := string(payload(t, listing))
	var recs []string
	for i := range 10000 {
		r := strings.ReplaceAll(template, roomID, rooms[i%len(rooms)])
		r = strings.ReplaceAll(r, listingID, fmt.Sprintf("%s%05d", listingID[:len(listingID)-5], i))
		r = strings.Replace(r, `"eventID":"`+listing.EventID+`"`, fmt.Sprintf(`"eventID":"big-%05d"`, i), 1)
		r = strings.Replace(r, `"SequenceNumber":"`+listing.Change.SequenceNumber+`"`, fmt.Sprintf(`"SequenceNumber":"%021d"`, 800000000+i), 1)
		recs = append(recs, r)
	}
	big := []byte(`{"Records":[` + strings.Join(recs, ",") + `]}`)
	t.Logf("batch: %d records, %.1f MB", len(recs), float64(len(big))/1e6)

	proj, _ := start(t, "projector", env(table, bk))
	r := proj.Invoke(big, 5*time.Second)
	if r.TimedOut || r.Exited || r.Error != nil {
		t.Fatalf("with a 5 s deadline: %+v %+v\n%s", r, r.Error, strings.Join(proj.Logs(), "\n"))
	}
	resp := batchResponse(t, r)
	if len(resp.BatchItemFailures) == 0 {
		t.Logf("the whole batch was done in %s (a fast machine): no failures to check", r.Duration)
	}
	t.Logf("with a 5 s deadline: answered after %s, %d records reported failed", r.Duration.Round(time.Millisecond), len(resp.BatchItemFailures))

	r = proj.Invoke(big, 5*time.Minute)
	if resp := batchResponse(t, r); len(resp.BatchItemFailures) > 0 {
		t.Fatalf("with time enough: %d failures", len(resp.BatchItemFailures))
	}
	rss, err := proj.RSS()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 records in %s; RSS after: %.1f MB", r.Duration.Round(time.Millisecond), float64(rss)/1e6)
	for _, id := range []string{rooms[0], rooms[19]} {
		_, acts := call(t, w, "GET", "/rooms/"+id+"/activities", "limit=5", alice, "", 200)
		if items, _ := acts["items"].([]any); len(items) != 5 {
			t.Errorf("room %s: activities derived: %v", id, acts)
		}
	}
}

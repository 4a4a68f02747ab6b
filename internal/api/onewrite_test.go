package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/dynastream/dynastream/internal/api"
	"github.com/dynastream/dynastream/internal/ddb"
)

// writeOps are the DynamoDB operations that write.
var writeOps = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

// A oneWrite route's request, with an Idempotency-Key or without, makes one
// DynamoDB write, a transaction, and on a member route no read before it:
// the key's record and the membership check are in the transaction. Its
// repeat with the key answers the first response, marked replayed, with
// no second effect; the key with another body is a 422; an outsider is
// refused as ever, and the refusal is what the key answers again.
func TestOneWriteRoutes(t *testing.T) {
	t.Parallel()
	e, tok := matrixEnv(t, "ow%03d")
	w := buildWorld(t, e, tok, 1)
	routes := api.OneWriteRoutes()
	if len(routes) == 0 {
		t.Fatal("no oneWrite routes")
	}
	for i, pattern := range routes {
		method, tmpl, _ := strings.Cut(pattern, " ")
		// a path, and a body, that make a new thing each time (n: the
		// send's number); a reaction's emoji is in its path
		emojis := []string{"%F0%9F%8E%89", "%F0%9F%9A%80", "%F0%9F%8D%95", "%F0%9F%8C%B5", "%F0%9F%90%A2", "%F0%9F%8E%B8"}
		fresh := map[int]string{} // a new listing per send, for a listing's routes
		pathOf := func(n int) string {
			p := strings.Replace(tmpl, "{emoji}", emojis[n%len(emojis)], 1)
			if strings.Contains(p, "{listingId}") {
				if fresh[n] == "" {
					var v struct{ ListingID string }
					e.ok(201, "POST", "/rooms/"+w.room+"/listings", tok[cOwner], map[string]any{"sourceBrand": "homegate", "title": "Fresh", "location": "Bern"}, &v)
					fresh[n] = v.ListingID
				}
				p = strings.Replace(p, "{listingId}", fresh[n], 1)
			}
			return w.path(p)
		}
		caller := cOwner
		if strings.HasPrefix(pattern, "POST /locations") || strings.HasPrefix(pattern, "PATCH /locations") {
			caller = cAdmin
		}
		body := func(n int) any {
			if strings.Contains(pattern, "/reactions/") {
				return nil
			}
			bodies := map[string]string{
				"POST /locations":                                 `{"locationCode":"bern-%[1]d","name":"Bern","placeId":"p2","formattedAddress":"b","lat":46.9,"lng":7.4}`,
				"POST /rooms/{roomId}/members":                    `{"userId":"user%[1]d"}`,
				"POST /resources/{type}/{id}/invites":             `{"inviteeId":"user%[1]d"}`,
				"POST /rooms/{roomId}/listings":                   `{"sourceBrand":"homegate","externalId":"OW-%[1]d","title":"One","location":"Zurich"}`,
				"POST /resources/{type}/{id}/comments":            `{"text":"hello %[1]d"}`,
				"PUT /rooms/{roomId}/criteria":                    `{"criteria":{"priceMax":%[1]d}}`,
				"POST /me/cooking-history":                        `{"recipeId":"` + w.recipe + `","notes":"take %[1]d"}`,
				"PUT /rooms/{roomId}/listings/{listingId}/status": `{"status":"SHORTLISTED"}`,
				"POST /rooms/{roomId}/listings/{listingId}/seen":  `{}`,
				"PATCH /locations/{locationId}":                   `{"name":"Zurich %[1]d"}`,
			}
			b, ok := bodies[pattern]
			if !ok {
				t.Fatalf("no body for %s", pattern)
			}
			if !strings.Contains(b, "%") {
				return json.RawMessage(b)
			}
			return json.RawMessage(fmt.Sprintf(b, 100*i+n+1))
		}
		t.Run(pattern, func(t *testing.T) {
			e := e.withT(t)
			for n, key := range []string{"", fmt.Sprintf("ow-key-%d", i)} {
				before := e.requests.Counts().ByLabel[pattern]
				var res response
				path := pathOf(n)
				if key == "" {
					res = e.do(method, path, tok[caller], body(n))
				} else {
					res, _ = e.keyed(method, path, tok[caller], key, body(n))
				}
				if res.status/100 != 2 {
					t.Fatalf("key %q: %d %s", key, res.status, res.body)
				}
				used := usage(e.requests.Counts().ByLabel[pattern], before)
				if used["TransactWriteItems"] != 1 || writes(used) != 1 {
					t.Errorf("key %q: requests %v, want one transaction and no other write", key, used)
				}
				if strings.Contains(pattern, "{listingId}") || strings.Contains(pattern, "{locationId}") {
					// the answer, made without reading the item back, is the
					// listing or location as stored
					read := path
					if strings.Contains(pattern, "{listingId}") {
						read = path[:strings.LastIndex(path, "/")]
					}
					if got := e.ok(200, "GET", read, tok[caller], nil, nil); string(got.body) != string(res.body) {
						t.Errorf("key %q: answered %s, stored %s", key, res.body, got.body)
					}
				}
				// the reads of a member route
				if reads, ok := memberReads[pattern]; ok && (used["GetItem"] != reads["GetItem"] || used["BatchGetItem"] != reads["BatchGetItem"]) {
					t.Errorf("key %q: requests %v, want reads %v", key, used, reads)
				}
				if key == "" {
					continue
				}
				before = e.requests.Counts().ByLabel[pattern]
				again, replayed := e.keyed(method, path, tok[caller], key, body(n))
				if again.status != res.status || replayed != "true" || string(again.body) != string(res.body) {
					t.Errorf("repeat: %d %s (replayed %q), want the first answer %d %s", again.status, again.body, replayed, res.status, res.body)
				}
				// the commit refused (the key's record is there), then the
				// claim that finds the record: nothing written
				if used := usage(e.requests.Counts().ByLabel[pattern], before); used["TransactWriteItems"] > 1 || writes(used) > 2 {
					t.Errorf("repeat: requests %v, want at most the refused commit and the claim", used)
				}
				if other, _ := e.keyed(method, pathOf(n+3), tok[caller], key, body(n+10)); other.status != 422 {
					t.Errorf("the key with another request: %d %s, want 422", other.status, other.body)
				}
			}
		})
	}
	// An outsider's keyed listing: refused as the ordinary way refuses it
	// (the room is not found for a non-member), nothing written, and the
	// refusal answered again for the key.
	path := "/rooms/" + w.room + "/listings"
	body := json.RawMessage(`{"sourceBrand":"homegate","externalId":"OUT-1","title":"Mine","location":"Bern"}`)
	plain := e.do("POST", path, tok[cOutsider], body)
	first, _ := e.keyed("POST", path, tok[cOutsider], "outsider-1", body)
	again, replayed := e.keyed("POST", path, tok[cOutsider], "outsider-1", body)
	if first.status != plain.status || first.status/100 != 4 || string(first.body) != string(plain.body) {
		t.Errorf("outsider keyed: %d %s, want as unkeyed %d %s", first.status, first.body, plain.status, plain.body)
	}
	if again.status != first.status || replayed != "true" {
		t.Errorf("outsider repeat: %d (replayed %q)", again.status, replayed)
	}
	var page struct{ Items []struct{ Title string } }
	e.ok(200, "GET", path+"?limit=100", tok[cOwner], nil, &page)
	for _, l := range page.Items {
		if l.Title == "Mine" {
			t.Error("the outsider's listing was written")
		}
	}
}

// memberReads are the reads of the member routes among oneWrite: none
// where the membership is checked in the transaction; one BatchGetItem of
// the membership and the listing where the handler reads the listing.
var memberReads = map[string]map[string]int64{
	"POST /rooms/{roomId}/listings":                   {},
	"PUT /rooms/{roomId}/criteria":                    {},
	"PUT /rooms/{roomId}/listings/{listingId}/status": {"BatchGetItem": 1},
	"POST /rooms/{roomId}/listings/{listingId}/seen":  {"BatchGetItem": 1},
}

// usage is what a label's calls did between two snapshots, by operation.
func usage(after, before ddb.Usage) map[string]int64 {
	out := maps.Clone(after.ByOp)
	for op, n := range before.ByOp {
		out[op] -= n
		if out[op] == 0 {
			delete(out, op)
		}
	}
	return out
}

func writes(used map[string]int64) int64 {
	var n int64
	for _, op := range writeOps {
		n += used[op]
	}
	return n
}

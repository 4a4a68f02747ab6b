package main

// Minimum is the fewest capacity units one write of a kind needs in this
// design, with the Idempotency-Key the load generator sends with every
// write: the items the write must change (with the index entries they
// write), the items whose state decides whether it may (access, the
// conditions the design states), and the key's record, which must commit
// with the effect, so that the effect is a transaction (twice the rate).
//
// It is priced by the rules make load prices the writer's transactions
// with (internal/ddb units.go): items of up to 1 KB; a put 1 unit and 1
// per index it is in; an update 1 and 2 per index whose key it moves (the
// old entry deleted, the new one put); a delete or a condition check 1;
// all twice in a transaction; a strongly consistent read 1 read unit.
// Index entries rewritten because an index projects every attribute are
// not counted, here or in what is measured.
type Minimum struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
	// Why lists the items.
	Why string `json:"why"`
}

// Units is the minimum's read and write units together.
func (m Minimum) Units() float64 { return m.Read + m.Write }

// minimum is the design's minimum per route of the load's mix.
var minimum = map[string]Minimum{
	"POST /rooms/{roomId}/listings":                   {2, 8, "read: the caller's membership and the room; transaction: the listing, the key's record and, for the half of the load's listings with an external id, its source lookup: with one, the listing is in the external-id and status indexes (3) and the lookup 1, 10 in all; without, in the status index (2), 6; 8 on average"},
	"PUT /rooms/{roomId}/criteria":                    {2, 4, "read: membership and room; transaction: the criteria version, the record"},
	"POST /rooms/{roomId}/members":                    {2, 6, "read: the owner's membership and the room; transaction: the member item, the user's room item, the record"},
	"DELETE /rooms/{roomId}/members/{userId}":         {1, 6, "read: the caller's membership; transaction: deletes of the member and user's room items, the record"},
	"PUT /rooms/{roomId}/listings/{listingId}/status": {2, 8, "read: membership and the listing (its status decides the move); transaction: the listing's update (its status index key moves: 3), the record"},
	"POST /rooms/{roomId}/listings/{listingId}/seen":  {2, 8, "as a status change (an unseen listing becomes seen)"},
	"POST /resources/{type}/{id}/comments":            {1, 6, "read: the caller's access item (owner or collaborator); transaction: the comment, its reference item, the record"},
	"POST /resources/{type}/{id}/invites":             {1, 10, "read: the caller's access item (the owner's); transaction: the invite (in the invitee index: 2), the inviter's and the resource's rate windows, the record"},
	"PUT /comments/{commentId}/reactions/{emoji}":     {2, 4, "read: the comment's reference (its resource), the caller's access item to that resource; transaction: the reaction, the record"},
	"DELETE /comments/{commentId}/reactions/{emoji}":  {2, 4, "as adding one, with a delete"},
	"POST /me/cooking-history":                        {1, 6, "read: the recipe (its title is copied); transaction: the entry, its id lookup, the record"},
	"PATCH /me/cooking-history/{historyId}":           {1, 4, "read: the entry's id lookup; transaction: the entry's update, the record"},
	"POST /locations":                                 {0, 10, "transaction: the location (in the time and code indexes: 3), its code lookup, the record"},
	"PATCH /locations/{locationId}":                   {1, 4, "read: the location (active, its version); transaction: its update, the record"},
}

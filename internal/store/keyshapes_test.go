package store

import "testing"

// Every key builder's partition key has its pattern's shape; keys that
// share a start (LOCATION, LOCATION#…, LOCATION_CODE#…) are told apart.
func TestShapeOf(t *testing.T) {
	for pk, want := range map[string]KeyShape{
		RoomPK("r1"):                  {"ROOM#<roomId>", "search room", true},
		UserPK("u1"):                  {"USER#<userId>", "user", true},
		UserPK("u1") + "#FAVORITE":    {"USER#<userId>#FAVORITE", "user", true},
		LocationKey("01J").PK:         {"LOCATION#<ulid>", "location", true},
		LocationCodeKey("AB").PK:      {"LOCATION_CODE#<code>", "location", true},
		locationIndexPK:               {"LOCATION", "item type (every location)", false},
		ingredientSearchPK:            {"INGREDIENT#SEARCH", "item type (every ingredient)", false},
		"INGREDIENT#42":               {"INGREDIENT#<id>", "ingredient", true},
		prefixRecent + "2026-11":      {"RECENT#<yyyy-mm>[#<shard>]", "month", false},
		prefixRecent + "2026-11#3":    {"RECENT#<yyyy-mm>[#<shard>]", "month", false},
		SKPrefixTrending + "2026-W48": {"TRENDING#<yyyy>-W<ww>[#<shard>]", "week", false},
		prefixMethod + "bake":         {"METHOD#<method>[#<shard>]", "cooking method", false},
		prefixChatRoom + "global":     {"CHATROOM#<roomId>", "chat room", true},
		CommentPK("c1"):               {"COMMENT#<commentId>", "comment", true},
		RequestKey("u1", "k").PK:      {"REQUEST#<userId>#<key>", "request", true},
		"SOMETHING#else":              {"SOMETHING#<…>", "?", false},
		"PLAIN":                       {"PLAIN", "?", false},
	} {
		if got := ShapeOf(pk); got != want {
			t.Errorf("ShapeOf(%q) = %+v, want %+v", pk, got, want)
		}
	}
}

package store

import "strings"

// KeyShape is what a partition key is: its pattern (docs/design.md §2), what
// one key of that pattern stands for, and whether the number of such keys
// grows with the users. A key per room, user, recipe or request has more
// keys as the service grows, each about as busy as before; a key per
// month, week, item type or cooking method stays one key, and all the
// growth lands on it. make load projects each key's rate by its shape
// (docs/scale.md).
type KeyShape struct {
	Pattern string `json:"pattern"`
	Per     string `json:"per"`
	Grows   bool   `json:"grows"`
}

// keyShapes are the partition-key patterns of the table, its indexes and the
// bookkeeping table: a pattern without a placeholder is one key, matched
// whole; the others by prefix (and suffix), the longer first where two
// share a start.
var keyShapes = []struct {
	prefix, suffix string
	KeyShape
}{
	{ingredientSearchPK, "", KeyShape{ingredientSearchPK, "item type (every ingredient)", false}},
	{locationIndexPK, "", KeyShape{locationIndexPK, "item type (every location)", false}},
	{shardRecordPK, "", KeyShape{shardRecordPK, "table (its write shards' record)", false}},
	{prefixRecent, "", KeyShape{prefixRecent + "<yyyy-mm>[#<shard>]", "month", false}},
	{SKPrefixTrending, "", KeyShape{SKPrefixTrending + "<yyyy>-W<ww>[#<shard>]", "week", false}},
	{prefixMethod, "", KeyShape{prefixMethod + "<method>[#<shard>]", "cooking method", false}},
	{prefixUser, "#FAVORITE", KeyShape{prefixUser + "<userId>#FAVORITE", "user", true}},
	{prefixUser, "", KeyShape{prefixUser + "<userId>", "user", true}},
	{prefixRoom, "", KeyShape{prefixRoom + "<roomId>", "search room", true}},
	{prefixSource, "", KeyShape{prefixSource + "<brand>#<externalId>", "listing source", true}},
	{"LOCATION_CODE#", "", KeyShape{"LOCATION_CODE#<code>", "location", true}},
	{"LOCATION#", "", KeyShape{"LOCATION#<ulid>", "location", true}},
	{prefixChatRoom, "", KeyShape{prefixChatRoom + "<roomId>", "chat room", true}},
	{prefixConnection, "", KeyShape{prefixConnection + "<connectionId>", "chat connection", true}},
	{"CONNECTIONS#", "", KeyShape{"CONNECTIONS#<userId>", "user", true}},
	{"CHATMSG#", "", KeyShape{"CHATMSG#<userId>#<clientMessageId>", "chat message", true}},
	{"INGREDIENT_NAME#", "", KeyShape{"INGREDIENT_NAME#<name>", "ingredient", true}},
	{"INGREDIENT#", "", KeyShape{"INGREDIENT#<id>", "ingredient", true}},
	{prefixRecipe, "", KeyShape{prefixRecipe + "<recipeId>", "recipe", true}},
	{prefixPending, "", KeyShape{prefixPending + "<recipeId>#<n>", "recipe (one of its pending counts)", true}},
	{"RESOURCE#", "", KeyShape{"RESOURCE#<TYPE>#<id>", "resource", true}},
	{"COMMENT#", "", KeyShape{"COMMENT#<commentId>", "comment", true}},
	{"EMAIL#", "", KeyShape{"EMAIL#<email>", "invitee e-mail", true}},
	{"RATE#", "", KeyShape{"RATE#<limit>#<scope>", "rate-limit scope", true}},
	{"REQUEST#", "", KeyShape{"REQUEST#<userId>#<key>", "request", true}},
	{"DEADLETTER#", "", KeyShape{"DEADLETTER#<consumer>", "consumer", false}},
	{"IDEMPOTENCY#", "", KeyShape{"IDEMPOTENCY#<effect>#<id>", "side effect (its once-guard)", true}},
}

// ShapeOf is a partition key's shape. A key of no known pattern keeps its
// first segment and is taken not to grow, so that a projection errs
// towards naming it.
func ShapeOf(pk string) KeyShape {
	for _, s := range keyShapes {
		whole := !strings.Contains(s.Pattern, "<")
		if whole && pk == s.prefix || !whole && strings.HasPrefix(pk, s.prefix) && strings.HasSuffix(pk, s.suffix) {
			return s.KeyShape
		}
	}
	head, _, found := strings.Cut(pk, "#")
	if !found {
		return KeyShape{Pattern: pk, Per: "?"}
	}
	return KeyShape{Pattern: head + "#<…>", Per: "?"}
}

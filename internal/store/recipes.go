package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/errs"
)

// Item types of recipes, cooking history and sessions (seed 003).
const (
	TypeRecipe         = "Recipe"
	TypeCookingHistory = "CookingHistory"
	TypeHistoryRef     = "CookingHistoryRef"
	TypeCookingSession = "CookingSession"
)

// Sort-key prefixes of the cooking patterns.
const (
	SKPrefixCooking    = "COOKING#"
	SKPrefixHistoryRef = "COOKING_ID#"
	SKPrefixSession    = "SESSION#"
	prefixRecipe       = "RECIPE#"
	prefixMethod       = "METHOD#"
)

// RecipePK is a recipe's partition (its metadata and its derived items).
func RecipePK(recipeID string) string { return prefixRecipe + recipeID }

// RecipeKey is a recipe's metadata item.
func RecipeKey(recipeID string) Key { return Key{RecipePK(recipeID), "METADATA"} }

// HistoryKey is a cooking history entry (pattern 2: USER#<id> /
// COOKING#<cookDate>#<historyId>).
func HistoryKey(userID, cookDate, historyID string) Key {
	return Key{UserPK(userID), SKPrefixCooking + cookDate + "#" + historyID}
}

// HistoryRefKey finds a history entry by id: its key holds the cook date,
// which a caller naming the entry by id does not know.
func HistoryRefKey(userID, historyID string) Key {
	return Key{UserPK(userID), SKPrefixHistoryRef + historyID}
}

// FavoritePK is a user's favourites partition on GSI1 (pattern 5).
func FavoritePK(userID string) string { return UserPK(userID) + "#FAVORITE" }

// SessionKey is a cooking session.
func SessionKey(userID, sessionID string) Key {
	return Key{UserPK(userID), SKPrefixSession + sessionID}
}

func recipeItem(r cooking.Recipe, methodShards int) (map[string]types.AttributeValue, error) {
	it, err := marshal(head{Key: RecipeKey(r.RecipeID), ItemType: TypeRecipe}, r)
	if err != nil {
		return nil, err
	}
	it["GSI1PK"] = &types.AttributeValueMemberS{Value: UserPK(r.AuthorID)}
	it["GSI1SK"] = &types.AttributeValueMemberS{Value: prefixRecipe + r.CreatedAt}
	it["GSI2PK"] = &types.AttributeValueMemberS{Value: MethodIndexPK(r.Method, r.RecipeID, methodShards)}
	it["GSI2SK"] = &types.AttributeValueMemberS{Value: cooking.RatingSortKey(r.AvgRating, r.CreatedAt, r.RecipeID)}
	return it, nil
}

// CreateRecipe writes a new recipe with no ratings.
func (s Cooking) CreateRecipe(ctx context.Context, r cooking.Recipe) error {
	r.Rating = cooking.Rating{}
	it, err := recipeItem(r, s.Sharding.Method)
	if err != nil {
		return err
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")})
	if isConditionFailed(err) {
		return errs.New(errs.Conflict, "recipe %s already exists", r.RecipeID)
	}
	if err != nil {
		return fmt.Errorf("store: create recipe: %w", err)
	}
	return nil
}

// GetRecipe reads a recipe.
func (s Cooking) GetRecipe(ctx context.Context, id string) (cooking.Recipe, error) {
	var r cooking.Recipe
	ok, err := s.get(ctx, RecipeKey(id), &r)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "recipe %s not found", id)
	}
	return r, err
}

// refusal says why a write conditioned on the recipe's author failed: 404
// when there is no such recipe, 403 when someone else wrote it (read only
// then: the write's condition is the check).
func (s Cooking) refusal(ctx context.Context, id, userID string) error {
	var r cooking.Recipe
	ok, err := s.getItem(ctx, RecipeKey(id), true, &r)
	switch {
	case err != nil:
		return err
	case ok && r.AuthorID != userID:
		return errs.New(errs.Forbidden, "only the recipe's author may change it")
	}
	return errs.New(errs.NotFound, "recipe %s not found", id)
}

// UpdateRecipe replaces the author's fields of a recipe (everything but
// its id, author, creation time and ratings, which the projector keeps),
// on the condition that userID wrote it. It returns the recipe as stored.
func (s Cooking) UpdateRecipe(ctx context.Context, r cooking.Recipe, userID string) (cooking.Recipe, error) {
	vals, err := attributevalue.MarshalMap(struct {
		Title       string                     `dynamodbav:":title"`
		Description string                     `dynamodbav:":desc"`
		Method      string                     `dynamodbav:":method"`
		Ingredients []cooking.RecipeIngredient `dynamodbav:":ingr"`
		Steps       []string                   `dynamodbav:":steps"`
		Servings    int                        `dynamodbav:":serv"`
		Prep        int                        `dynamodbav:":prep"`
		Cook        int                        `dynamodbav:":cook"`
		SuitableFor []string                   `dynamodbav:":suit"`
		UpdatedAt   string                     `dynamodbav:":upd"`
		GSI2PK      string                     `dynamodbav:":gsi2pk"`
		Author      string                     `dynamodbav:":me"`
	}{r.Title, r.Description, r.Method, r.Ingredients, r.Steps, r.Servings, r.PrepMinutes, r.CookMinutes, r.SuitableFor, r.UpdatedAt, MethodIndexPK(r.Method, r.RecipeID, s.Sharding.Method), userID})
	if err != nil {
		return r, fmt.Errorf("store: marshal recipe: %w", err)
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: RecipeKey(r.RecipeID).AV(),
		UpdateExpression: aws.String("SET title = :title, description = :desc, #method = :method, ingredients = :ingr, steps = :steps, " +
			"servings = :serv, prepMinutes = :prep, cookMinutes = :cook, suitableFor = :suit, updatedAt = :upd, GSI2PK = :gsi2pk"),
		ConditionExpression:       aws.String("attribute_exists(PK) AND authorId = :me"),
		ExpressionAttributeNames:  map[string]string{"#method": "method"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return r, s.refusal(ctx, r.RecipeID, userID)
	}
	if err != nil {
		return r, fmt.Errorf("store: update recipe: %w", err)
	}
	var got cooking.Recipe
	if !s.decode(out.Attributes, &got) {
		return r, fmt.Errorf("store: recipe %s as updated cannot be read", r.RecipeID)
	}
	return got, nil
}

// DeleteRecipe deletes a recipe, on the condition that userID wrote it. The
// projector then removes the recipe's derived items (recent cookings,
// trending counts).
func (s Cooking) DeleteRecipe(ctx context.Context, id, userID string) error {
	_, err := s.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.Table, Key: RecipeKey(id).AV(),
		ConditionExpression:       aws.String("attribute_exists(PK) AND authorId = :me"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: userID}},
	})
	if isConditionFailed(err) {
		return s.refusal(ctx, id, userID)
	}
	if err != nil {
		return fmt.Errorf("store: delete recipe: %w", err)
	}
	return nil
}

// MethodIndexPK is the GSI2 partition key of a recipe's item: its cooking
// method's, in the write shard of the recipe's id.
func MethodIndexPK(method, recipeID string, shards int) string {
	return shardKey(prefixMethod+method, recipeID, shards)
}

// RecipesByMethod pages through the recipes of a cooking method, best
// rated first, then newest (pattern 3, GSI2 METHOD#<method>).
func (s Cooking) RecipesByMethod(ctx context.Context, method string, p Page) ([]cooking.Recipe, string, error) {
	var out []cooking.Recipe
	next, err := s.queryShards(ctx, query{index: IndexGSI2, skPrefix: "RATING#", desc: true, page: p}, prefixMethod+method, s.Sharding.Method, decodeInto(s.Store, &out))
	return out, next, err
}

// RecipesByAuthor pages through an author's recipes, newest first (GSI1
// USER#<author> / RECIPE#<createdAt>).
func (s Cooking) RecipesByAuthor(ctx context.Context, authorID string, p Page) ([]cooking.Recipe, string, error) {
	var out []cooking.Recipe
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: UserPK(authorID), skPrefix: prefixRecipe, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// historyRef points from a history id to its entry's key.
type historyRef struct {
	HistoryID string `dynamodbav:"historyId"`
	CookDate  string `dynamodbav:"cookDate"`
}

func historyItems(h cooking.History) (entry, ref map[string]types.AttributeValue, err error) {
	if entry, err = marshal(head{Key: HistoryKey(h.UserID, h.CookDate, h.HistoryID), ItemType: TypeCookingHistory}, h); err != nil {
		return nil, nil, err
	}
	if h.Favorite {
		entry["GSI1PK"] = &types.AttributeValueMemberS{Value: FavoritePK(h.UserID)}
		entry["GSI1SK"] = &types.AttributeValueMemberS{Value: h.CookDate}
	}
	ref, err = marshal(head{Key: HistoryRefKey(h.UserID, h.HistoryID), ItemType: TypeHistoryRef}, historyRef{h.HistoryID, h.CookDate})
	return entry, ref, err
}

// recipeExists is a transaction's check that a recipe exists.
func (s Cooking) recipeExists(id string) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName: &s.Table, Key: RecipeKey(id).AV(), ConditionExpression: aws.String("attribute_exists(PK)"),
	}}
}

// RecordCooking writes a cooking history entry and its id lookup in one
// transaction. The caller has read the recipe (its title is the entry's):
// the transaction does not check it again, as a check would cost the
// recipe's partition two write units per cooking (a transaction's
// ConditionCheck is a transactional write of its key), most of a hot
// recipe's partition at scale (make load -aws-limits 0.01 met it). A
// recipe deleted between the read and the write is as one deleted just
// after: the entry stays in its cook's history (as entries written before
// a deletion do) and its counts go with the recipe's cascade.
func (s Cooking) RecordCooking(ctx context.Context, h cooking.History) error {
	entry, ref, err := historyItems(h)
	if err != nil {
		return err
	}
	err = s.transactWrite(ctx, []types.TransactWriteItem{
		put(s.Table, entry, "attribute_not_exists(PK)"), put(s.Table, ref, "attribute_not_exists(PK)"),
	})
	if reasons := cancelReasons(err); reasons != nil && slices.Contains(reasons, "ConditionalCheckFailed") {
		return errs.New(errs.Conflict, "cooking history %s already exists", h.HistoryID)
	}
	if err != nil {
		return fmt.Errorf("store: record cooking: %w", err)
	}
	return nil
}

// historyKey finds one of a user's history entries' key by its id (one
// read of the id lookup).
func (s Cooking) historyKey(ctx context.Context, userID, historyID string) (Key, string, error) {
	var ref historyRef
	ok, err := s.getItem(ctx, HistoryRefKey(userID, historyID), true, &ref)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "cooking history %s not found", historyID)
	}
	return HistoryKey(userID, ref.CookDate, historyID), ref.CookDate, err
}

// GetHistory reads one of a user's cooking history entries by id.
func (s Cooking) GetHistory(ctx context.Context, userID, historyID string) (cooking.History, error) {
	var h cooking.History
	k, _, err := s.historyKey(ctx, userID, historyID)
	if err != nil {
		return h, err
	}
	ok, err := s.getItem(ctx, k, true, &h)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "cooking history %s not found", historyID)
	}
	return h, err
}

// HistoryPatch changes a history entry: each non-nil field is set; a
// Rating of 0 removes the rating.
type HistoryPatch struct {
	Rating    *int
	Notes     *string
	Favorite  *bool
	UpdatedAt string
}

// UpdateHistory applies a patch to one of a user's history entries and
// returns it as stored. Favourites enter and leave the sparse GSI1
// USER#<id>#FAVORITE with the flag.
func (s Cooking) UpdateHistory(ctx context.Context, userID, historyID string, p HistoryPatch) (cooking.History, error) {
	var got cooking.History
	key, cookDate, err := s.historyKey(ctx, userID, historyID)
	if err != nil {
		return got, err
	}
	set := []string{"updatedAt = :upd"}
	var remove []string
	vals := map[string]types.AttributeValue{":upd": &types.AttributeValueMemberS{Value: p.UpdatedAt}}
	if p.Rating != nil {
		if *p.Rating == 0 {
			remove = append(remove, "rating")
		} else {
			set = append(set, "rating = :rating")
			vals[":rating"] = &types.AttributeValueMemberN{Value: strconv.Itoa(*p.Rating)}
		}
	}
	if p.Notes != nil {
		if *p.Notes == "" {
			remove = append(remove, "notes")
		} else {
			set = append(set, "notes = :notes")
			vals[":notes"] = &types.AttributeValueMemberS{Value: *p.Notes}
		}
	}
	if p.Favorite != nil {
		set = append(set, "favorite = :fav")
		vals[":fav"] = &types.AttributeValueMemberBOOL{Value: *p.Favorite}
		if *p.Favorite {
			set = append(set, "GSI1PK = :gsi1pk", "GSI1SK = :gsi1sk")
			vals[":gsi1pk"] = &types.AttributeValueMemberS{Value: FavoritePK(userID)}
			vals[":gsi1sk"] = &types.AttributeValueMemberS{Value: cookDate}
		} else {
			remove = append(remove, "GSI1PK", "GSI1SK")
		}
	}
	expr := "SET " + strings.Join(set, ", ")
	if len(remove) > 0 {
		expr += " REMOVE " + strings.Join(remove, ", ")
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: key.AV(),
		UpdateExpression: aws.String(expr), ConditionExpression: aws.String("attribute_exists(PK)"),
		ExpressionAttributeValues: vals, ReturnValues: types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return got, errs.New(errs.NotFound, "cooking history %s not found", historyID)
	}
	if err != nil {
		return got, fmt.Errorf("store: update cooking history: %w", err)
	}
	if !s.decode(out.Attributes, &got) {
		return got, fmt.Errorf("store: cooking history %s as updated cannot be read", historyID)
	}
	return got, nil
}

// DeleteHistory deletes one of a user's history entries and its lookup.
func (s Cooking) DeleteHistory(ctx context.Context, userID, historyID string) error {
	key, _, err := s.historyKey(ctx, userID, historyID)
	if err != nil {
		return err
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: &s.Table, Key: key.AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		{Delete: &types.Delete{TableName: &s.Table, Key: HistoryRefKey(userID, historyID).AV()}},
	}})
	if cancelReasons(err) != nil {
		return errs.New(errs.NotFound, "cooking history %s not found", historyID)
	}
	if err != nil {
		return fmt.Errorf("store: delete cooking history: %w", err)
	}
	return nil
}

// ListHistory pages through a user's cooking history, newest cook date
// first (pattern 2: USER#<id>, SK begins_with COOKING#).
func (s Cooking) ListHistory(ctx context.Context, userID string, p Page) ([]cooking.History, string, error) {
	var out []cooking.History
	next, err := s.queryPage(ctx, query{pk: UserPK(userID), skPrefix: SKPrefixCooking, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// ListFavorites pages through a user's favourite cookings, newest first
// (pattern 5: GSI1 USER#<id>#FAVORITE).
func (s Cooking) ListFavorites(ctx context.Context, userID string, p Page) ([]cooking.History, string, error) {
	var out []cooking.History
	next, err := s.queryPage(ctx, query{index: IndexGSI1, pk: FavoritePK(userID), desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// StartSession writes a new cooking session (ttl 24 h).
func (s Cooking) StartSession(ctx context.Context, ss cooking.Session) error {
	it, err := marshal(head{Key: SessionKey(ss.UserID, ss.SessionID), ItemType: TypeCookingSession}, ss)
	if err != nil {
		return err
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: it, ConditionExpression: aws.String("attribute_not_exists(PK)")})
	if isConditionFailed(err) {
		return errs.New(errs.Conflict, "session %s already exists", ss.SessionID)
	}
	if err != nil {
		return fmt.Errorf("store: start session: %w", err)
	}
	return nil
}

// GetSession reads a live session: an expired one is not found, whether
// or not DynamoDB deleted it yet.
func (s Cooking) GetSession(ctx context.Context, userID, sessionID string, now time.Time) (cooking.Session, error) {
	var ss cooking.Session
	ok, err := s.getItem(ctx, SessionKey(userID, sessionID), true, &ss)
	if err == nil && (!ok || ss.TTL <= now.Unix()) {
		err = errs.New(errs.NotFound, "cooking session %s not found", sessionID)
	}
	return ss, err
}

// SetSessionStep moves an active, live session to a step.
func (s Cooking) SetSessionStep(ctx context.Context, userID, sessionID string, step int, now time.Time) (cooking.Session, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: SessionKey(userID, sessionID).AV(),
		UpdateExpression:         aws.String("SET currentStep = :step, updatedAt = :upd"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND #status = :active AND #ttl > :now AND stepCount > :step"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":step": &types.AttributeValueMemberN{Value: strconv.Itoa(step)}, ":upd": &types.AttributeValueMemberS{Value: Timestamp(now)},
			":active": &types.AttributeValueMemberS{Value: cooking.SessionActive}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return s.sessionRefusal(ctx, userID, sessionID, now, step)
	}
	if err != nil {
		return cooking.Session{}, fmt.Errorf("store: session step: %w", err)
	}
	var ss cooking.Session
	if !s.decode(out.Attributes, &ss) {
		return ss, fmt.Errorf("store: session %s as updated cannot be read", sessionID)
	}
	return ss, nil
}

// sessionRefusal says why a session change's condition failed: not found
// (or expired), not active, or a step past its last.
func (s Cooking) sessionRefusal(ctx context.Context, userID, sessionID string, now time.Time, step int) (cooking.Session, error) {
	ss, err := s.GetSession(ctx, userID, sessionID, now)
	switch {
	case err != nil:
		return ss, err
	case ss.Status != cooking.SessionActive:
		return ss, errs.New(errs.Conflict, "cooking session %s is %s", sessionID, ss.Status)
	case step >= ss.StepCount:
		return ss, errs.Field("step", fmt.Sprintf("must be below the recipe's step count (%d)", ss.StepCount))
	}
	return ss, errs.New(errs.Conflict, "cooking session %s changed meanwhile; try again", sessionID)
}

// AbandonSession ends an active session without a history entry.
func (s Cooking) AbandonSession(ctx context.Context, userID, sessionID string, now time.Time) (cooking.Session, error) {
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.Table, Key: SessionKey(userID, sessionID).AV(),
		UpdateExpression:         aws.String("SET #status = :abandoned, updatedAt = :upd"),
		ConditionExpression:      aws.String("attribute_exists(PK) AND #status = :active AND #ttl > :now"),
		ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": AttrTTL},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":abandoned": &types.AttributeValueMemberS{Value: cooking.SessionAbandoned}, ":upd": &types.AttributeValueMemberS{Value: Timestamp(now)},
			":active": &types.AttributeValueMemberS{Value: cooking.SessionActive}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		// Abandoned already (a retry, or this very write with its answer
		// lost): the same success.
		if ss, gerr := s.GetSession(ctx, userID, sessionID, now); gerr == nil && ss.Status == cooking.SessionAbandoned {
			return ss, nil
		}
		return s.sessionRefusal(ctx, userID, sessionID, now, -1)
	}
	if err != nil {
		return cooking.Session{}, fmt.Errorf("store: abandon session: %w", err)
	}
	var ss cooking.Session
	s.decode(out.Attributes, &ss)
	return ss, nil
}

// CompleteSession completes an active session and records its cooking
// history entry h in one transaction. Completing a completed session again
// records nothing and returns the entry recorded the first time (created
// false), so a retried "complete" never counts twice.
func (s Cooking) CompleteSession(ctx context.Context, h cooking.History, now time.Time) (got cooking.History, created bool, err error) {
	entry, ref, err := historyItems(h)
	if err != nil {
		return h, false, err
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: &s.Table, Key: SessionKey(h.UserID, h.SessionID).AV(),
			UpdateExpression:         aws.String("SET #status = :completed, historyId = :hid, cookDate = :date, updatedAt = :upd"),
			ConditionExpression:      aws.String("attribute_exists(PK) AND #status = :active AND #ttl > :now"),
			ExpressionAttributeNames: map[string]string{"#status": "status", "#ttl": AttrTTL},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":completed": &types.AttributeValueMemberS{Value: cooking.SessionCompleted}, ":hid": &types.AttributeValueMemberS{Value: h.HistoryID},
				":date": &types.AttributeValueMemberS{Value: h.CookDate}, ":upd": &types.AttributeValueMemberS{Value: Timestamp(now)},
				":active": &types.AttributeValueMemberS{Value: cooking.SessionActive}, ":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix(), 10)},
			},
		}},
		s.recipeExists(h.RecipeID),
		put(s.Table, entry, "attribute_not_exists(PK)"),
		put(s.Table, ref, "attribute_not_exists(PK)"),
	}})
	if reasons := cancelReasons(err); reasons != nil {
		if reasons[1] == "ConditionalCheckFailed" {
			return h, false, errs.New(errs.Conflict, "recipe %s was deleted", h.RecipeID)
		}
		ss, gerr := s.GetSession(ctx, h.UserID, h.SessionID, now)
		switch {
		case gerr != nil:
			return h, false, gerr
		case ss.Status == cooking.SessionCompleted:
			got, err := s.GetHistory(ctx, h.UserID, ss.HistoryID)
			return got, false, err
		case ss.Status != cooking.SessionActive:
			return h, false, errs.New(errs.Conflict, "cooking session %s is %s", h.SessionID, ss.Status)
		}
		return h, false, errs.New(errs.Conflict, "cooking session %s changed meanwhile; try again", h.SessionID)
	}
	if err != nil {
		return h, false, fmt.Errorf("store: complete session: %w", err)
	}
	return h, true, nil
}

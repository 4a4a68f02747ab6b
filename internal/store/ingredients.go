package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/errs"
)

// Item types of the cooking patterns (seed 003).
const (
	TypeIngredient     = "Ingredient"
	TypeIngredientName = "IngredientNameLookup"
)

// ingredientSearchPK is the GSI2 partition of every ingredient (pattern 4).
const ingredientSearchPK = "INGREDIENT#SEARCH"

// IngredientKey is an ingredient's key.
func IngredientKey(id string) Key { return Key{"INGREDIENT#" + id, "METADATA"} }

// IngredientNameKey is the lookup that claims a normalized name.
func IngredientNameKey(normalized string) Key { return Key{"INGREDIENT_NAME#" + normalized, "META"} }

type ingredientNameLookup struct {
	IngredientID string `dynamodbav:"ingredientId"`
}

// CreateIngredient writes an ingredient and claims its normalized name in
// one transaction: a name taken by another ingredient is errs.Conflict
// naming it (existingIngredientId), and nothing is written.
func (s Cooking) CreateIngredient(ctx context.Context, in cooking.Ingredient) error {
	it, err := marshal(head{Key: IngredientKey(in.IngredientID), ItemType: TypeIngredient}, in)
	if err != nil {
		return err
	}
	it["GSI2PK"] = &types.AttributeValueMemberS{Value: ingredientSearchPK}
	it["GSI2SK"] = &types.AttributeValueMemberS{Value: "NAME#" + in.NormalizedName}
	lookup, err := marshal(head{Key: IngredientNameKey(in.NormalizedName), ItemType: TypeIngredientName}, ingredientNameLookup{in.IngredientID})
	if err != nil {
		return err
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		put(s.Table, it, "attribute_not_exists(PK)"),
		put(s.Table, lookup, "attribute_not_exists(PK)"),
	}})
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case reasons[1] == "ConditionalCheckFailed":
			var lk ingredientNameLookup
			if ok, gerr := s.getItem(ctx, IngredientNameKey(in.NormalizedName), true, &lk); gerr != nil || !ok {
				return errs.New(errs.Conflict, "an ingredient named %q exists already", in.NormalizedName)
			}
			e := errs.New(errs.Conflict, "ingredient %s has the same name (%s)", lk.IngredientID, in.NormalizedName)
			e.Extra = map[string]any{"existingIngredientId": lk.IngredientID}
			return e
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.Conflict, "ingredient %s already exists", in.IngredientID)
		default:
			return tryAgain("a concurrent change to the name %s; try again", in.NormalizedName)
		}
	}
	if err != nil {
		return fmt.Errorf("store: create ingredient: %w", err)
	}
	return nil
}

// GetIngredient reads an ingredient by id.
func (s Cooking) GetIngredient(ctx context.Context, id string) (cooking.Ingredient, error) {
	var in cooking.Ingredient
	ok, err := s.get(ctx, IngredientKey(id), &in)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "ingredient %s not found", id)
	}
	return in, err
}

// FindIngredients pages through the ingredients whose normalized name is
// normalized (exact) or starts with it, by normalized name (pattern 4 on
// GSI2 INGREDIENT#SEARCH / NAME#…).
func (s Cooking) FindIngredients(ctx context.Context, normalized string, exact bool, p Page) ([]cooking.Ingredient, string, error) {
	q := query{index: IndexGSI2, pk: ingredientSearchPK, skPrefix: "NAME#" + normalized, page: p}
	if exact {
		q.skFrom, q.skTo = "NAME#"+normalized, "NAME#"+normalized
	}
	var out []cooking.Ingredient
	next, err := s.queryPage(ctx, q, decodeInto(s.Store, &out))
	return out, next, err
}

// TypeCookingPreferences marks a user's cooking preferences.
const TypeCookingPreferences = "CookingPreferences"

// CookingPreferencesKey is a user's cooking preferences (seed 003:
// USER#<id> / PREFERENCES, also on GSI1 under the same keys).
func CookingPreferencesKey(userID string) Key { return Key{UserPK(userID), "PREFERENCES"} }

// PutCookingPreferences replaces a user's cooking preferences.
func (s Cooking) PutCookingPreferences(ctx context.Context, p cooking.Preferences) error {
	k := CookingPreferencesKey(p.UserID)
	it, err := marshal(head{Key: k, ItemType: TypeCookingPreferences}, p)
	if err != nil {
		return err
	}
	it["GSI1PK"] = &types.AttributeValueMemberS{Value: k.PK}
	it["GSI1SK"] = &types.AttributeValueMemberS{Value: k.SK}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: it}); err != nil {
		return fmt.Errorf("store: put cooking preferences: %w", err)
	}
	return nil
}

// GetCookingPreferences reads a user's cooking preferences, the defaults
// when they set none.
func (s Cooking) GetCookingPreferences(ctx context.Context, userID string) (cooking.Preferences, error) {
	p := cooking.DefaultPreferences(userID)
	_, err := s.get(ctx, CookingPreferencesKey(userID), &p)
	return p, err
}

// MissingIngredients returns the ids among ids that name no ingredient,
// with one BatchGetItem round.
func (s Cooking) MissingIngredients(ctx context.Context, ids []string) ([]string, error) {
	keys := make([]Key, len(ids))
	for i, id := range ids {
		keys[i] = IngredientKey(id)
	}
	found := map[string]bool{}
	err := s.batchGet(ctx, keys, false, func(it map[string]types.AttributeValue) error {
		var in cooking.Ingredient
		if s.decode(it, &in) {
			found[in.IngredientID] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read ingredients: %w", err)
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

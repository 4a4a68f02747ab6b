package cooking

import (
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Ingredient is a master ingredient: recipes name ingredients by id.
type Ingredient struct {
	IngredientID string `json:"ingredientId" dynamodbav:"ingredientId"`
	Name         string `json:"name" dynamodbav:"name"`
	// NormalizedName is Normalize(Name): the ingredient's unique key for
	// search (exact and prefix).
	NormalizedName string `json:"normalizedName" dynamodbav:"normalizedName"`
	Category       string `json:"category,omitempty" dynamodbav:"category,omitempty"`
	CreatedAt      string `json:"createdAt" dynamodbav:"createdAt"`
	CreatedBy      string `json:"createdByUserId" dynamodbav:"createdByUserId"`
}

// folded are letters that are not a base letter plus combining marks, so
// that decomposing them strips nothing: each becomes its plain form.
var folded = map[rune]string{
	'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d", 'ø': "o", 'Ø': "o", 'ł': "l", 'Ł': "l",
	'ß': "ss", 'ẞ': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe", 'þ': "th", 'Þ': "th",
	'ı': "i", 'İ': "i", // Turkish dotless and dotted i
}

// MaxNormalized bounds a normalized name, in bytes: it goes into keys
// (INGREDIENT_NAME#<name>, GSI2 NAME#<name>; DynamoDB takes 1,024 bytes of
// sort key), and normalizing can make a name longer than it was (a Hangul
// syllable of 3 bytes becomes three letters of 3 bytes each).
const MaxNormalized = 512

// NormalizedTooLong is the reason a name whose normalized form is longer
// than MaxNormalized is refused.
var NormalizedTooLong = fmt.Sprintf("must be at most %d bytes once normalized (lower case, accents and symbols dropped; some letters take more bytes then)", MaxNormalized)

// Normalize is the one normalization of ingredient names, for writes and
// for queries alike: compatibility forms folded (fullwidth "ＳＡＬＴ" is
// "salt"), lower case, diacritics stripped (Vietnamese
// included: "Thịt gà" → "thit-ga", "đậu" → "dau"; đ, ø, ł, ß, æ, œ and the
// Turkish ı/İ are folded, as they are not a letter plus a mark), and every
// run of spaces, punctuation and symbols one hyphen, none at the ends.
// Letters of other scripts are kept (lower-cased). An empty result means
// the name has no letter or digit.
func Normalize(s string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(strings.ToValidUTF8(s, " ")) {
		if f, ok := folded[r]; ok {
			b.WriteString(f)
			hyphen = false
			continue
		}
		switch {
		case unicode.Is(unicode.Mn, r):
			// a combining mark: dropped
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteString(string(unicode.ToLower(r)))
			hyphen = false
		default:
			if !hyphen && b.Len() > 0 {
				b.WriteByte('-')
				hyphen = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// Methods are the cooking methods a recipe may have and a user may favour
// (a closed set: the seed's GSI2 METHOD#<method> partitions).
var Methods = []string{"bake", "boil", "braise", "fry", "grill", "raw", "roast", "simmer", "steam", "stir-fry"}

// Restrictions are the dietary restrictions a user may declare.
var Restrictions = []string{"dairy-free", "gluten-free", "halal", "kosher", "nut-free", "pescatarian", "vegan", "vegetarian"}

// SkillLevels are a cook's levels.
var SkillLevels = []string{"beginner", "intermediate", "advanced"}

// Preferences are a user's cooking preferences (one item per user).
type Preferences struct {
	UserID              string   `json:"userId" dynamodbav:"userId"`
	FavoriteMethods     []string `json:"favoriteMethods" dynamodbav:"favoriteMethods"`
	DietaryRestrictions []string `json:"dietaryRestrictions" dynamodbav:"dietaryRestrictions"`
	// DislikedIngredients are ingredient ids.
	DislikedIngredients []string `json:"dislikedIngredients" dynamodbav:"dislikedIngredients"`
	SkillLevel          string   `json:"skillLevel,omitempty" dynamodbav:"skillLevel,omitempty"`
	Servings            int      `json:"servings,omitempty" dynamodbav:"servings,omitempty"`
	UpdatedAt           string   `json:"updatedAt,omitempty" dynamodbav:"updatedAt,omitempty"`
}

// DefaultPreferences are a user's preferences before they set any.
func DefaultPreferences(userID string) Preferences {
	return Preferences{UserID: userID, FavoriteMethods: []string{}, DietaryRestrictions: []string{}, DislikedIngredients: []string{}}
}

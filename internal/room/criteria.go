package room

// Criterion names, in the fixed order used wherever criteria are listed
// (conflicts, comments, tie breaks).
const (
	Locations = "locations"
	Price     = "price"
	Rooms     = "rooms"
	Area      = "area"
	Features  = "features"
)

// CriterionNames lists every criterion in its canonical order.
var CriterionNames = []string{Locations, Price, Rooms, Area, Features}

// Mode is a room's combine mode (context.combineMode).
type Mode string

// The combine modes of docs/design.md §3.
const (
	ModeStrict Mode = "strict"
	ModeAll    Mode = "all"
	ModeMixed  Mode = "mixed"
)

// DefaultMode is used when a room sets no combine mode.
const DefaultMode = ModeMixed

// Valid reports whether m is one of the known modes.
func (m Mode) Valid() bool { return m == ModeStrict || m == ModeAll || m == ModeMixed }

// Criteria is one member's search criteria document. A nil pointer or an
// empty set means "not set".
type Criteria struct {
	Locations []string `json:"locations,omitempty" dynamodbav:"locations,omitempty"`
	PriceMin  *float64 `json:"priceMin,omitempty" dynamodbav:"priceMin,omitempty"`
	PriceMax  *float64 `json:"priceMax,omitempty" dynamodbav:"priceMax,omitempty"`
	RoomsMin  *float64 `json:"roomsMin,omitempty" dynamodbav:"roomsMin,omitempty"`
	RoomsMax  *float64 `json:"roomsMax,omitempty" dynamodbav:"roomsMax,omitempty"`
	AreaMin   *float64 `json:"areaMin,omitempty" dynamodbav:"areaMin,omitempty"`
	Features  []string `json:"features,omitempty" dynamodbav:"features,omitempty"`
}

// Weights gives each criterion an importance from 0 to 5; an unset weight
// counts as DefaultWeight.
type Weights struct {
	Locations *int `json:"locations,omitempty" dynamodbav:"locations,omitempty"`
	Price     *int `json:"price,omitempty" dynamodbav:"price,omitempty"`
	Rooms     *int `json:"rooms,omitempty" dynamodbav:"rooms,omitempty"`
	Area      *int `json:"area,omitempty" dynamodbav:"area,omitempty"`
	Features  *int `json:"features,omitempty" dynamodbav:"features,omitempty"`
}

// DefaultWeight is the importance of a criterion whose weight is unset.
const DefaultWeight = 1

// MaxWeight is the highest allowed weight.
const MaxWeight = 5

// Of returns the weight of the named criterion, DefaultWeight when unset.
func (w Weights) Of(criterion string) int {
	var p *int
	switch criterion {
	case Locations:
		p = w.Locations
	case Price:
		p = w.Price
	case Rooms:
		p = w.Rooms
	case Area:
		p = w.Area
	case Features:
		p = w.Features
	}
	if p == nil {
		return DefaultWeight
	}
	return *p
}

// MemberCriteria is the criteria version of one member that a derivation
// uses, with the sort key it was read from (for criteriaRefs).
type MemberCriteria struct {
	UserID   string
	SK       string
	Criteria Criteria
	Weights  Weights
}

// Combined is the room's combined criteria (docs/design.md §3).
type Combined struct {
	Criteria    Criteria           `json:"criteria" dynamodbav:"criteria"`
	Weights     map[string]float64 `json:"weights" dynamodbav:"weights"`
	FromUserIDs []string           `json:"fromUserIds" dynamodbav:"fromUserIds"`
	CombineMode Mode               `json:"combineMode" dynamodbav:"combineMode"`
	// Conflicts lists, in canonical order, the criteria whose strict
	// combination came out empty (kept in Criteria as an empty set or an
	// inverted range).
	Conflicts []string `json:"conflicts" dynamodbav:"conflicts"`
}

// Levels of compatibility.
const (
	LevelLow       = "low"
	LevelMedium    = "medium"
	LevelHigh      = "high"
	LevelExcellent = "excellent"
)

// Compatibility is the room's compatibility snapshot (docs/design.md §3).
type Compatibility struct {
	ScorePercent int    `json:"scorePercent" dynamodbav:"scorePercent"`
	Level        string `json:"level" dynamodbav:"level"`
	Comment      string `json:"comment" dynamodbav:"comment"`
	// CriteriaRefs are the SKs of the criteria versions used, sorted.
	CriteriaRefs []string `json:"criteriaRefs" dynamodbav:"criteriaRefs"`
	// Pairs holds each pair's score (0..1), keyed "userA|userB" with userA < userB.
	Pairs map[string]float64 `json:"pairs" dynamodbav:"pairs"`
}

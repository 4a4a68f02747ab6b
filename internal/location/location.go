package location

import "regexp"

// Statuses.
const (
	Active   = "active"
	Inactive = "inactive"
)

// Location is a managed location.
type Location struct {
	LocationID        string            `json:"locationId" dynamodbav:"locationId"`
	LocationCode      string            `json:"locationCode" dynamodbav:"locationCode"`
	Name              string            `json:"name" dynamodbav:"name"`
	PlaceID           string            `json:"placeId" dynamodbav:"placeId"`
	FormattedAddress  string            `json:"formattedAddress" dynamodbav:"formattedAddress"`
	AddressComponents map[string]string `json:"addressComponents,omitempty" dynamodbav:"addressComponents,omitempty"`
	Lat               float64           `json:"lat" dynamodbav:"lat"`
	Lng               float64           `json:"lng" dynamodbav:"lng"`
	Status            string            `json:"status" dynamodbav:"status"`
	CreatedAt         string            `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt         string            `json:"updatedAt" dynamodbav:"updatedAt"`
}

// codePattern is a slug: lower-case letters and digits in groups joined by
// single hyphens, 3 to 64 characters (e.g. austin-main-01).
var codePattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

// CodeRule describes a valid code.
const CodeRule = "3-64 characters: lower-case letters and digits in groups joined by single hyphens (e.g. austin-main-01)"

// ValidCode reports whether s is a valid location code.
func ValidCode(s string) bool { return len(s) >= 3 && len(s) <= 64 && codePattern.MatchString(s) }

// CheckCoordinates says what is wrong with a latitude/longitude pair.
func CheckCoordinates(lat, lng float64) (field, reason string, ok bool) {
	switch {
	case lat < -90 || lat > 90 || lat != lat:
		return "lat", "must be from -90 to 90", false
	case lng < -180 || lng > 180 || lng != lng:
		return "lng", "must be from -180 to 180", false
	}
	return "", "", true
}

package events

import "reflect"

// Locations events (seed 001) and the shared user profile.

// LocationCreated: an admin created a location.
type LocationCreated struct {
	LocationID       string  `json:"locationId"`
	LocationCode     string  `json:"locationCode"`
	Name             string  `json:"name"`
	PlaceID          string  `json:"placeId"`
	FormattedAddress string  `json:"formattedAddress"`
	Lat              float64 `json:"lat"`
	Lng              float64 `json:"lng"`
	Status           string  `json:"status"`
	CreatedAt        string  `json:"createdAt"`
}

func (e LocationCreated) occurred() string { return e.CreatedAt }

// LocationUpdated: an admin changed a location's name or address.
type LocationUpdated struct {
	LocationID       string  `json:"locationId"`
	Name             string  `json:"name"`
	PlaceID          string  `json:"placeId"`
	FormattedAddress string  `json:"formattedAddress"`
	Lat              float64 `json:"lat"`
	Lng              float64 `json:"lng"`
	UpdatedAt        string  `json:"updatedAt"`
}

func (e LocationUpdated) occurred() string { return e.UpdatedAt }

// LocationDeactivated: an admin soft-deleted a location (its code stays taken).
type LocationDeactivated struct {
	LocationID   string `json:"locationId"`
	LocationCode string `json:"locationCode"`
	UpdatedAt    string `json:"updatedAt"`
}

func (e LocationDeactivated) occurred() string { return e.UpdatedAt }

// LocationCodeChanged: an admin moved a location to a new code.
type LocationCodeChanged struct {
	LocationID string `json:"locationId"`
	From       string `json:"from"`
	To         string `json:"to"`
	UpdatedAt  string `json:"updatedAt"`
}

func (e LocationCodeChanged) occurred() string { return e.UpdatedAt }

// ProfileUpdated: a user changed their profile (the e-mail address is not
// part of the event).
type ProfileUpdated struct {
	UserID    string `json:"userId"`
	Name      string `json:"name"`
	UpdatedAt string `json:"updatedAt"`
}

func (e ProfileUpdated) occurred() string { return e.UpdatedAt }

func init() {
	const at = "2026-01-02T15:04:05.000Z"
	for _, d := range []Definition{
		{Name: "LocationCreated", Source: SourceLocations, Doc: "An admin created a location; its code is unique.",
			Example: LocationCreated{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "austin-main-01", "Austin Main Center", "ChIJN1t_tDeuEmsRUsoyG83frY4", "123 Main St, Austin, TX 78701", 30.2672, -97.7431, "active", at}},
		{Name: "LocationUpdated", Source: SourceLocations, Doc: "An admin changed a location's name or address.",
			Example: LocationUpdated{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "Austin Main Center", "ChIJ…", "125 Main St, Austin, TX 78701", 30.2673, -97.7432, at}},
		{Name: "LocationDeactivated", Source: SourceLocations, Doc: "An admin soft-deleted a location; its code is never reused.",
			Example: LocationDeactivated{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "austin-main-01", at}},
		{Name: "LocationCodeChanged", Source: SourceLocations, Doc: "An admin moved a location to a new code; the old one is free again.",
			Example: LocationCodeChanged{"01ARZ3NDEKTSV4RRFFQ69G5FAV", "austin-main-01", "austin-downtown-01", at}},
		{Name: "ProfileUpdated", Source: SourceUsers, Doc: "A user changed their profile (name; the e-mail address is not disclosed).",
			Example: ProfileUpdated{"bob", "Bob", at}},
	} {
		define(d)
	}
	register("Location", locationEvents)
	register("LocationCodeLookup", nil) // internal to the uniqueness rule
	register("UserProfile", func(c Change) ([]any, error) {
		if c.Kind == Remove || c.Kind == TTLRemove {
			return nil, nil
		}
		return one[ProfileUpdated](c.New)
	})
}

func locationEvents(c Change) ([]any, error) {
	switch c.Kind {
	case Insert:
		return one[LocationCreated](c.New)
	case Modify:
		var out []any
		if o, n := str(c.Old, "locationCode"), str(c.New, "locationCode"); o != n {
			out = append(out, LocationCodeChanged{str(c.New, "locationId"), o, n, str(c.New, "updatedAt")})
		}
		if str(c.Old, "status") != "inactive" && str(c.New, "status") == "inactive" {
			out = append(out, LocationDeactivated{str(c.New, "locationId"), str(c.New, "locationCode"), str(c.New, "updatedAt")})
		}
		changed := false
		for _, k := range []string{"name", "placeId", "formattedAddress", "lat", "lng", "addressComponents"} {
			if !reflect.DeepEqual(c.Old[k], c.New[k]) {
				changed = true
			}
		}
		if changed {
			ev, err := one[LocationUpdated](c.New)
			if err != nil {
				return nil, err
			}
			out = append(out, ev...)
		}
		return out, nil
	}
	return nil, nil
}

package api

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/store"
)

// Location routes (seed 001). Any authenticated user reads locations; only
// an admin (the group admins in the token's cognito:groups claim) creates,
// updates, deactivates them or changes their code. A location's code is
// unique for good: the lookup item that claims it stays when the location
// is deactivated, and only a change of code frees the old one.

// adminGroup is the group whose members manage locations.
const adminGroup = "admins"

// Limits on a location's fields.
const (
	maxPlaceID        = 300
	maxAddress        = 500
	maxComponents     = 30
	maxComponentValue = 200
)

// componentKeyPattern is an addressComponents key (street_number,
// postalCode, administrative_area_level_1, …).
var componentKeyPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)

const componentKeyRule = "1-64 characters: letters, digits and _ (starting with a letter)"

// requireAdmin checks that the caller is an admin (the admin routes'
// access).
func requireAdmin(r *http.Request) error {
	if !slices.Contains(identity(r.Context()).Groups, adminGroup) {
		return errs.New(errs.Forbidden, "only an admin (group %s) manages locations", adminGroup)
	}
	return nil
}

type createLocationRequest struct {
	LocationCode      string            `json:"locationCode"`
	Name              string            `json:"name"`
	PlaceID           string            `json:"placeId"`
	FormattedAddress  string            `json:"formattedAddress"`
	AddressComponents map[string]string `json:"addressComponents"`
	Lat               *float64          `json:"lat"`
	Lng               *float64          `json:"lng"`
}

// checkCode adds an error for an invalid location code.
func checkCode(fs *[]errs.FieldError, field, code string) {
	if !location.ValidCode(code) {
		*fs = append(*fs, errs.FieldError{Field: field, Reason: location.CodeRule})
	}
}

// checkCoordinate adds an error for a missing or out-of-range lat or lng.
func checkCoordinate(fs *[]errs.FieldError, field string, v *float64) {
	if v == nil {
		*fs = append(*fs, errs.FieldError{Field: field, Reason: "is required"})
		return
	}
	lat, lng := *v, 0.0
	if field == "lng" {
		lat, lng = 0, *v
	}
	if f, reason, ok := location.CheckCoordinates(lat, lng); !ok {
		*fs = append(*fs, errs.FieldError{Field: f, Reason: reason})
	}
}

// checkComponents adds the errors of an addressComponents object: at most
// maxComponents entries, keys of componentKeyPattern (the first bad one is
// named), values not blank and at most maxComponentValue characters.
func checkComponents(fs *[]errs.FieldError, comps map[string]string) {
	if len(comps) > maxComponents {
		*fs = append(*fs, errs.FieldError{Field: "addressComponents", Reason: fmt.Sprintf("must have at most %d entries", maxComponents)})
		return
	}
	keys := slices.Sorted(maps.Keys(comps))
	for _, k := range keys {
		if !componentKeyPattern.MatchString(k) {
			*fs = append(*fs, errs.FieldError{Field: "addressComponents", Reason: fmt.Sprintf("key %q: %s", k, componentKeyRule)})
			return
		}
	}
	for _, k := range keys {
		checkText(fs, "addressComponents."+k, comps[k], true, maxComponentValue)
	}
}

// trimComponents returns the components with their values trimmed (nil
// for none).
func trimComponents(comps map[string]string) map[string]string {
	if len(comps) == 0 {
		return nil
	}
	out := make(map[string]string, len(comps))
	for k, v := range comps {
		out[k] = strings.TrimSpace(v)
	}
	return out
}

func (req createLocationRequest) validate() error {
	var fs []errs.FieldError
	checkCode(&fs, "locationCode", req.LocationCode)
	checkText(&fs, "name", req.Name, true, maxName)
	checkText(&fs, "placeId", req.PlaceID, true, maxPlaceID)
	checkText(&fs, "formattedAddress", req.FormattedAddress, true, maxAddress)
	checkComponents(&fs, req.AddressComponents)
	checkCoordinate(&fs, "lat", req.Lat)
	checkCoordinate(&fs, "lng", req.Lng)
	return errs.Fields(fs)
}

// createLocation creates an active location (admins only). Its code is
// claimed in the same transaction: a taken code, even one of a deactivated
// location, is a 409 and nothing is written.
func (s *Server) createLocation(w http.ResponseWriter, r *http.Request) error {
	var req createLocationRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	now := store.Timestamp(s.Now())
	l := location.Location{
		LocationID: s.NewID(), LocationCode: req.LocationCode, Name: strings.TrimSpace(req.Name),
		PlaceID: strings.TrimSpace(req.PlaceID), FormattedAddress: strings.TrimSpace(req.FormattedAddress),
		AddressComponents: trimComponents(req.AddressComponents), Lat: *req.Lat, Lng: *req.Lng,
		Status: location.Active, CreatedAt: now, UpdatedAt: now,
	}
	err := s.Store.Locations.CreateLocation(r.Context(), l)
	if errs.Is(err, errs.Conflict) {
		// The code is taken: by this very location sent again (a retry)
		// it is the same success; by another, a 409 naming it.
		old, gerr := s.Store.Locations.GetLocationByCode(r.Context(), l.LocationCode)
		if gerr != nil {
			return err
		}
		if sameLocation(old, l) {
			return created(w, "/locations/"+old.LocationID, old)
		}
		var e *errs.Error
		if errors.As(err, &e) {
			e.Extra = map[string]any{"existingLocationId": old.LocationID}
		}
		return err
	}
	if err != nil {
		return err
	}
	return created(w, "/locations/"+l.LocationID, l)
}

// sameLocation says whether an existing location is what a create asked
// for: the same code, name, place, address and position, still active.
func sameLocation(old, l location.Location) bool {
	return old.Status == location.Active && old.LocationCode == l.LocationCode && old.Name == l.Name && old.PlaceID == l.PlaceID &&
		old.FormattedAddress == l.FormattedAddress && old.Lat == l.Lat && old.Lng == l.Lng && maps.Equal(old.AddressComponents, l.AddressComponents)
}

func (s *Server) getLocation(w http.ResponseWriter, r *http.Request) error {
	return reply(w, http.StatusOK)(s.Store.Locations.GetLocation(r.Context(), r.PathValue("locationId")))
}

// getLocationByCode finds a location through its code lookup. A
// deactivated location keeps its code and is found too.
func (s *Server) getLocationByCode(w http.ResponseWriter, r *http.Request) error {
	code := r.PathValue("code")
	if !location.ValidCode(code) {
		return errs.Field("code", location.CodeRule)
	}
	return reply(w, http.StatusOK)(s.Store.Locations.GetLocationByCode(r.Context(), code))
}

// Orders of GET /locations.
const (
	orderNewest = "newest"
	orderCode   = "code"
)

// listLocations lists all locations, or those of ?status=, newest first
// (GSI1) or by code (?order=code, GSI2).
func (s *Server) listLocations(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var fs []errs.FieldError
	status := q.Get("status")
	if status != "" && status != location.Active && status != location.Inactive {
		fs = append(fs, errs.FieldError{Field: "status", Reason: `must be "active" or "inactive"`})
	}
	order := store.NewestFirst
	switch q.Get("order") {
	case "", orderNewest:
	case orderCode:
		order = store.ByCode
	default:
		fs = append(fs, errs.FieldError{Field: "order", Reason: `must be "newest" or "code"`})
	}
	if err := errs.Fields(fs); err != nil {
		return err
	}
	return replyPage(w)(s.Store.Locations.ListLocations(r.Context(), status, order, p))
}

// updateLocationRequest: a member left out or null keeps its value;
// addressComponents {} removes them all.
type updateLocationRequest struct {
	Name              *string            `json:"name"`
	PlaceID           *string            `json:"placeId"`
	FormattedAddress  *string            `json:"formattedAddress"`
	AddressComponents *map[string]string `json:"addressComponents"`
	Lat               *float64           `json:"lat"`
	Lng               *float64           `json:"lng"`
}

func (req updateLocationRequest) validate() error {
	if req == (updateLocationRequest{}) {
		return errs.Field("body", "nothing to update: give at least one of name, placeId, formattedAddress, addressComponents, lat, lng")
	}
	var fs []errs.FieldError
	if req.Name != nil {
		checkText(&fs, "name", *req.Name, true, maxName)
	}
	if req.PlaceID != nil {
		checkText(&fs, "placeId", *req.PlaceID, true, maxPlaceID)
	}
	if req.FormattedAddress != nil {
		checkText(&fs, "formattedAddress", *req.FormattedAddress, true, maxAddress)
	}
	if req.AddressComponents != nil {
		checkComponents(&fs, *req.AddressComponents)
	}
	if req.Lat != nil {
		checkCoordinate(&fs, "lat", req.Lat)
	}
	if req.Lng != nil {
		checkCoordinate(&fs, "lng", req.Lng)
	}
	return errs.Fields(fs)
}

// activeLocation reads the location of the path; a deactivated one is a 409
// (it is kept for its code, not changed).
func (s *Server) activeLocation(r *http.Request) (location.Location, error) {
	l, err := s.Store.Locations.GetLocation(r.Context(), r.PathValue("locationId"))
	if err == nil && l.Status != location.Active {
		err = errs.New(errs.Conflict, "location %s is inactive", l.LocationID)
	}
	return l, err
}

// updateLocation changes a location's name and address fields (admins
// only); updatedAt is set.
func (s *Server) updateLocation(w http.ResponseWriter, r *http.Request) error {
	var req updateLocationRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if err := req.validate(); err != nil {
		return err
	}
	l, err := s.activeLocation(r)
	if err != nil {
		return err
	}
	if req.Name != nil {
		l.Name = strings.TrimSpace(*req.Name)
	}
	if req.PlaceID != nil {
		l.PlaceID = strings.TrimSpace(*req.PlaceID)
	}
	if req.FormattedAddress != nil {
		l.FormattedAddress = strings.TrimSpace(*req.FormattedAddress)
	}
	if req.AddressComponents != nil {
		l.AddressComponents = trimComponents(*req.AddressComponents)
	}
	if req.Lat != nil {
		l.Lat = *req.Lat
	}
	if req.Lng != nil {
		l.Lng = *req.Lng
	}
	prev := l.UpdatedAt
	l.UpdatedAt = store.Timestamp(s.Now())
	return reply(w, http.StatusOK)(s.Store.Locations.UpdateLocation(r.Context(), l, prev))
}

// deleteLocation deactivates a location (admins only): a soft delete, the
// location stays readable with status inactive and its code stays taken.
// Deactivating it again is a 409.
func (s *Server) deleteLocation(w http.ResponseWriter, r *http.Request) error {
	l, err := s.Store.Locations.GetLocation(r.Context(), r.PathValue("locationId"))
	if err != nil {
		return err
	}
	if l.Status == location.Inactive {
		return errs.New(errs.Conflict, "location %s is already inactive", l.LocationID)
	}
	return reply(w, http.StatusOK)(s.Store.Locations.DeactivateLocation(r.Context(), l.LocationID, store.Timestamp(s.Now())))
}

type changeCodeRequest struct {
	LocationCode string `json:"locationCode"`
}

// changeLocationCode moves an active location to a new code in one
// transaction (admins only): the new code is claimed, the old one freed. A
// taken code is a 409 and nothing changes; the location's own code changes
// nothing (200).
func (s *Server) changeLocationCode(w http.ResponseWriter, r *http.Request) error {
	var req changeCodeRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var fs []errs.FieldError
	checkCode(&fs, "locationCode", req.LocationCode)
	if err := errs.Fields(fs); err != nil {
		return err
	}
	l, err := s.activeLocation(r)
	if err != nil {
		return err
	}
	if req.LocationCode != l.LocationCode {
		if l, err = s.Store.Locations.ChangeLocationCode(r.Context(), l, req.LocationCode, store.Timestamp(s.Now())); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, l)
	return nil
}

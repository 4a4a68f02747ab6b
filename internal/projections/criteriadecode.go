package projections

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/room"
)

// decodeCriteriaVersion is attributevalue.UnmarshalMap into a
// room.CriteriaVersion, without reflection for the shape the store writes
// (strings, numbers, lists of strings, the two nested maps), which is every
// criteria record the projector sees. Anything else — another attribute
// type for a field, a number that does not parse, a key that matches a
// field only case-insensitively — is left to attributevalue itself, so the
// result (and the error) is always exactly attributevalue's; a
// differential test holds it to that.
func decodeCriteriaVersion(m map[string]types.AttributeValue) (room.CriteriaVersion, error) {
	if v, ok := fastCriteriaVersion(m); ok {
		return v, nil
	}
	var v room.CriteriaVersion
	err := attributevalue.UnmarshalMap(m, &v)
	return v, err
}

var (
	versionFields  = []string{"roomId", "userId", "timestamp", "criteria", "weights", "source"}
	criteriaFields = []string{"locations", "priceMin", "priceMax", "roomsMin", "roomsMax", "areaMin", "features"}
	weightFields   = []string{"locations", "price", "rooms", "area", "features"}
)

// foldsOnto reports whether k is not one of names but equal to one of them
// but for case (attributevalue would decode it into that field).
func foldsOnto(k string, names []string) bool {
	for _, n := range names {
		if k != n && strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

func fastCriteriaVersion(m map[string]types.AttributeValue) (v room.CriteriaVersion, ok bool) {
	for k, av := range m {
		switch k {
		case "roomId":
			v.RoomID, ok = str(av)
		case "userId":
			v.UserID, ok = str(av)
		case "timestamp":
			v.Timestamp, ok = str(av)
		case "source":
			v.Source, ok = str(av)
		case "criteria":
			v.Criteria, ok = fastCriteria(av)
		case "weights":
			v.Weights, ok = fastWeights(av)
		default:
			ok = !foldsOnto(k, versionFields)
		}
		if !ok {
			return v, false
		}
	}
	return v, true
}

func str(av types.AttributeValue) (string, bool) {
	s, ok := av.(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

func float(av types.AttributeValue) (*float64, bool) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return nil, false
	}
	return &f, true
}

func integer(av types.AttributeValue) (*int, bool) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return nil, false
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || int64(int(i)) != i {
		return nil, false
	}
	v := int(i)
	return &v, true
}

// strings decodes a non-empty list of strings (an empty one, a set or a
// NULL are attributevalue's to decode).
func stringList(av types.AttributeValue) ([]string, bool) {
	l, ok := av.(*types.AttributeValueMemberL)
	if !ok || len(l.Value) == 0 {
		return nil, false
	}
	out := make([]string, len(l.Value))
	for i, e := range l.Value {
		if out[i], ok = str(e); !ok {
			return nil, false
		}
	}
	return out, true
}

func fastCriteria(av types.AttributeValue) (c room.Criteria, ok bool) {
	mm, isMap := av.(*types.AttributeValueMemberM)
	if !isMap {
		return c, false
	}
	for k, e := range mm.Value {
		switch k {
		case "locations":
			c.Locations, ok = stringList(e)
		case "features":
			c.Features, ok = stringList(e)
		case "priceMin":
			c.PriceMin, ok = float(e)
		case "priceMax":
			c.PriceMax, ok = float(e)
		case "roomsMin":
			c.RoomsMin, ok = float(e)
		case "roomsMax":
			c.RoomsMax, ok = float(e)
		case "areaMin":
			c.AreaMin, ok = float(e)
		default:
			ok = !foldsOnto(k, criteriaFields)
		}
		if !ok {
			return c, false
		}
	}
	return c, true
}

func fastWeights(av types.AttributeValue) (w room.Weights, ok bool) {
	mm, isMap := av.(*types.AttributeValueMemberM)
	if !isMap {
		return w, false
	}
	for k, e := range mm.Value {
		switch k {
		case "locations":
			w.Locations, ok = integer(e)
		case "price":
			w.Price, ok = integer(e)
		case "rooms":
			w.Rooms, ok = integer(e)
		case "area":
			w.Area, ok = integer(e)
		case "features":
			w.Features, ok = integer(e)
		default:
			ok = !foldsOnto(k, weightFields)
		}
		if !ok {
			return w, false
		}
	}
	return w, true
}

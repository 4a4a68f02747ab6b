package filter

import (
	"encoding/base64"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// value is a leaf of a record's JSON: a string, a number, a boolean or
// null.
type value struct {
	kind valueKind
	s    string
	n    float64
	b    bool
}

type valueKind uint8

const (
	valString valueKind = iota
	valNumber
	valBool
	valNull
)

// leaves calls f with every leaf value at path in the record's JSON, as
// Lambda hands the record to a function (aws-lambda-go's encoding of
// events.DynamoDBEventRecord): a path that ends at an object has no
// leaves, and a list contributes each of its elements. f returns false to
// stop early.
func leaves(r *events.DynamoDBEventRecord, path []string, f func(value) bool) {
	if len(path) == 0 {
		return
	}
	str := func(s string) {
		if len(path) == 1 {
			f(value{kind: valString, s: s})
		}
	}
	switch path[0] {
	case "awsRegion":
		str(r.AWSRegion)
	case "eventID":
		str(r.EventID)
	case "eventName":
		str(r.EventName)
	case "eventSource":
		str(r.EventSource)
	case "eventVersion":
		str(r.EventVersion)
	case "eventSourceARN":
		str(r.EventSourceArn)
	case "userIdentity":
		if r.UserIdentity == nil || len(path) != 2 {
			return
		}
		switch path[1] {
		case "type":
			f(value{kind: valString, s: r.UserIdentity.Type})
		case "principalId":
			f(value{kind: valString, s: r.UserIdentity.PrincipalID})
		}
	case "dynamodb":
		change(&r.Change, path[1:], f)
	}
}

func change(c *events.DynamoDBStreamRecord, path []string, f func(value) bool) {
	if len(path) == 0 {
		return
	}
	leaf := len(path) == 1
	switch path[0] {
	case "ApproximateCreationDateTime":
		if leaf && !c.ApproximateCreationDateTime.IsZero() {
			f(value{kind: valNumber, n: float64(c.ApproximateCreationDateTime.UnixNano()) / 1e9})
		}
	case "Keys":
		image(c.Keys, path[1:], f)
	case "NewImage":
		image(c.NewImage, path[1:], f)
	case "OldImage":
		image(c.OldImage, path[1:], f)
	case "SequenceNumber":
		if leaf {
			f(value{kind: valString, s: c.SequenceNumber})
		}
	case "SizeBytes":
		if leaf {
			f(value{kind: valNumber, n: float64(c.SizeBytes)})
		}
	case "StreamViewType":
		if leaf {
			f(value{kind: valString, s: c.StreamViewType})
		}
	}
}

// image walks an item's attributes: {"name": {"S": "…"}, …}.
func image(m map[string]events.DynamoDBAttributeValue, path []string, f func(value) bool) {
	if len(path) == 0 {
		return
	}
	av, ok := m[path[0]]
	if !ok {
		return
	}
	attribute(av, path[1:], f)
}

// attribute walks one attribute value, {"<type>": …}: N is a string in the
// record's JSON, B and BS are base64, NULL is true.
func attribute(av events.DynamoDBAttributeValue, path []string, f func(value) bool) {
	if len(path) == 0 || path[0] != typeKey(av.DataType()) {
		return
	}
	rest := path[1:]
	leaf := len(rest) == 0
	switch av.DataType() {
	case events.DataTypeString:
		if leaf {
			f(value{kind: valString, s: av.String()})
		}
	case events.DataTypeNumber:
		if leaf {
			f(value{kind: valString, s: av.Number()})
		}
	case events.DataTypeBinary:
		if leaf {
			f(value{kind: valString, s: base64.StdEncoding.EncodeToString(av.Binary())})
		}
	case events.DataTypeBoolean:
		if leaf {
			f(value{kind: valBool, b: av.Boolean()})
		}
	case events.DataTypeNull:
		if leaf {
			f(value{kind: valBool, b: true})
		}
	case events.DataTypeMap:
		image(av.Map(), rest, f)
	case events.DataTypeList:
		for _, e := range av.List() {
			attribute(e, rest, f)
		}
	case events.DataTypeStringSet:
		if leaf {
			for _, s := range av.StringSet() {
				if !f(value{kind: valString, s: s}) {
					return
				}
			}
		}
	case events.DataTypeNumberSet:
		if leaf {
			for _, s := range av.NumberSet() {
				if !f(value{kind: valString, s: s}) {
					return
				}
			}
		}
	case events.DataTypeBinarySet:
		if leaf {
			for _, b := range av.BinarySet() {
				if !f(value{kind: valString, s: base64.StdEncoding.EncodeToString(b)}) {
					return
				}
			}
		}
	}
}

// typeKey is an attribute type's key in the record's JSON.
func typeKey(t events.DynamoDBDataType) string {
	switch t {
	case events.DataTypeString:
		return "S"
	case events.DataTypeNumber:
		return "N"
	case events.DataTypeBinary:
		return "B"
	case events.DataTypeBoolean:
		return "BOOL"
	case events.DataTypeNull:
		return "NULL"
	case events.DataTypeMap:
		return "M"
	case events.DataTypeList:
		return "L"
	case events.DataTypeStringSet:
		return "SS"
	case events.DataTypeNumberSet:
		return "NS"
	case events.DataTypeBinarySet:
		return "BS"
	}
	return "?" + strconv.Itoa(int(t))
}

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

// node is a place in the record's JSON, as Lambda hands the record to a
// function (aws-lambda-go's encoding of events.DynamoDBEventRecord): the
// record, its userIdentity, its dynamodb part, an item image (or an M), an
// attribute value ({"<type>": …}), a list of attribute values (an L), or
// nothing (a missing field). The record itself is passed beside a node, so
// that it stays on the stack.
type node struct {
	kind nodeKind
	img  map[string]events.DynamoDBAttributeValue
	av   events.DynamoDBAttributeValue
	list []events.DynamoDBAttributeValue
}

type nodeKind uint8

const (
	nNone nodeKind = iota
	nRecord
	nIdentity
	nChange
	nImage
	nAttr
	nList
)

// child is the object or list under key (nNone for a leaf, or for
// nothing there).
func (n node) child(r *events.DynamoDBEventRecord, key string) node {
	switch n.kind {
	case nRecord:
		switch key {
		case "dynamodb":
			return node{kind: nChange}
		case "userIdentity":
			if r.UserIdentity != nil {
				return node{kind: nIdentity}
			}
		}
	case nChange:
		var img map[string]events.DynamoDBAttributeValue
		switch key {
		case "Keys":
			img = r.Change.Keys
		case "NewImage":
			img = r.Change.NewImage
		case "OldImage":
			img = r.Change.OldImage
		}
		if len(img) > 0 { // an empty map is left out of the JSON
			return node{kind: nImage, img: img}
		}
	case nImage:
		if av, ok := n.img[key]; ok {
			return node{kind: nAttr, av: av}
		}
	case nAttr:
		if key != typeKey(n.av.DataType()) {
			return node{}
		}
		switch n.av.DataType() {
		case events.DataTypeMap:
			return node{kind: nImage, img: n.av.Map()}
		case events.DataTypeList:
			return node{kind: nList, list: n.av.List()}
		}
	case nList: // a key of the elements: the lists of their children are the elements' business
	}
	return node{}
}

// leaves hands f every leaf value under key (a list's elements each; a
// list of objects has none of its own), until f has matched.
func (n node) leaves(r *events.DynamoDBEventRecord, key string, f *leafMatch) {
	str := func(s string) { f.see(value{kind: valString, s: s}) }
	switch n.kind {
	case nRecord:
		switch key {
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
		}
	case nIdentity:
		switch key {
		case "type":
			str(r.UserIdentity.Type)
		case "principalId":
			str(r.UserIdentity.PrincipalID)
		}
	case nChange:
		c := &r.Change
		switch key {
		case "ApproximateCreationDateTime":
			if !c.ApproximateCreationDateTime.IsZero() {
				f.see(value{kind: valNumber, n: float64(c.ApproximateCreationDateTime.UnixNano()) / 1e9})
			}
		case "SequenceNumber":
			str(c.SequenceNumber)
		case "SizeBytes":
			f.see(value{kind: valNumber, n: float64(c.SizeBytes)})
		case "StreamViewType":
			str(c.StreamViewType)
		}
	case nAttr:
		attrLeaves(n.av, key, f)
	case nList: // the elements' leaves under key
		for _, e := range n.list {
			attrLeaves(e, key, f)
		}
	}
}

// attrLeaves are the leaves of an attribute value under key: N is a
// string in the record's JSON, B and BS are base64, NULL is true. (Apart
// from leaves, so that the record a node points at stays on the stack.)
func attrLeaves(av events.DynamoDBAttributeValue, key string, f *leafMatch) {
	str := func(s string) { f.see(value{kind: valString, s: s}) }
	if key != typeKey(av.DataType()) {
		return
	}
	switch av.DataType() {
	case events.DataTypeString:
		str(av.String())
	case events.DataTypeNumber:
		str(av.Number()) // a string in the record's JSON
	case events.DataTypeBinary:
		str(base64.StdEncoding.EncodeToString(av.Binary()))
	case events.DataTypeBoolean:
		f.see(value{kind: valBool, b: av.Boolean()})
	case events.DataTypeNull:
		f.see(value{kind: valBool, b: true})
	case events.DataTypeStringSet:
		for _, s := range av.StringSet() {
			if !f.see(value{kind: valString, s: s}) {
				return
			}
		}
	case events.DataTypeNumberSet:
		for _, s := range av.NumberSet() {
			if !f.see(value{kind: valString, s: s}) {
				return
			}
		}
	case events.DataTypeBinarySet:
		for _, b := range av.BinarySet() {
			if !f.see(value{kind: valString, s: base64.StdEncoding.EncodeToString(b)}) {
				return
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

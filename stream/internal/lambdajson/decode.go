package lambdajson

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/go-json-experiment/json/jsontext"
)

// Decode decodes a DynamoDB stream invocation payload (the JSON Lambda
// sends) into aws-lambda-go's event types in one pass over its tokens,
// with exactly the result json.Unmarshal into an events.DynamoDBEvent gives:
// the same event for every payload it accepts, an error for every payload
// it rejects (or panics on: a binary set with a member that is not a
// string). What that takes, beyond the plain case: object member names are
// matched as encoding/json matches them (exactly, else case-insensitively);
// a member that comes twice is decoded twice into the same place (a list
// or a record merges, a map gains keys); null leaves a field as it is,
// empties a list, a map or a pointer, and makes an approximate creation time
// of 0 (time.Unix(0, 0), as aws-lambda-go's SecondsEpochTime does);
// invalid UTF-8 becomes U+FFFD; an attribute value is a JSON object with
// exactly one type member (a repeated one counts once, its last value
// wins), and a number anywhere inside one must fit a float64 (aws-lambda-go
// parses attribute values into interface{} first).
//
// The tokenizer is jsontext (github.com/go-json-experiment/json, the
// prototype of Go's encoding/json/v2), chosen over json-iterator's Iterator
// and encoding/json's Decoder.Token for its allocations and speed (the
// docs/performance.md, "Lambda's fast path", has the measurements).
func Decode(payload []byte) (events.DynamoDBEvent, error) {
	d := eventDecoder{dec: jsontext.NewDecoder(bytes.NewBuffer(payload), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	var ev events.DynamoDBEvent
	switch d.dec.PeekKind() {
	case 'n':
		if _, err := d.dec.ReadToken(); err != nil {
			return events.DynamoDBEvent{}, err
		}
	case '{':
		if err := d.event(&ev); err != nil {
			return events.DynamoDBEvent{}, err
		}
	default:
		if err := d.dec.SkipValue(); err != nil {
			return events.DynamoDBEvent{}, err
		}
		return events.DynamoDBEvent{}, errors.New("stream: the event is not a JSON object")
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("stream: the event has data after its JSON value")
		}
		return events.DynamoDBEvent{}, err
	}
	return ev, nil
}

type eventDecoder struct {
	dec   *jsontext.Decoder
	names map[string]string // attribute names seen, so each is allocated once per payload
	sizes [3]int            // the last Keys, NewImage and OldImage sizes: a batch's records are alike
}

// name returns an attribute name read as tok, allocated once per payload
// (the same few names come in every record's images).
func (d *eventDecoder) name(tok jsontext.Token) string {
	if s, ok := d.names[tok.String()]; ok {
		return s
	}
	s := tok.String()
	if len(d.names) < 1024 {
		if d.names == nil {
			d.names = map[string]string{}
		}
		d.names[s] = s
	}
	return s
}

// fieldIs matches a member name to a struct field's JSON name as
// encoding/json does: exactly, else case-insensitively (bytes.EqualFold).
func fieldIs(name, field string) bool { return name == field || strings.EqualFold(name, field) }

// errType is a member of the wrong JSON type for its field.
func errType(what string, k jsontext.Kind) error {
	return fmt.Errorf("stream: %s: want %s, got a JSON %s", what, wantOf(what), kindName(k))
}

func wantOf(what string) string {
	switch what {
	case "Records":
		return "a list of records"
	case "SizeBytes":
		return "an integer"
	case "ApproximateCreationDateTime":
		return "epoch seconds"
	case "dynamodb", "userIdentity":
		return "an object"
	case "Keys", "NewImage", "OldImage":
		return "a map of attribute values"
	}
	return "a string"
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// The objects are read member by member in loops of their own, not through
// a callback: a member name handed to a func value would escape and cost an
// allocation per name, where a name only compared costs none.

// open reads an object's {.
func (d *eventDecoder) open() error {
	_, err := d.dec.ReadToken()
	return err
}

// more reports whether the object has another member; at its end it reads
// the }.
func (d *eventDecoder) more() (bool, error) {
	if d.dec.PeekKind() != '}' {
		return true, nil
	}
	_, err := d.dec.ReadToken()
	return false, err
}

func (d *eventDecoder) event(ev *events.DynamoDBEvent) error {
	if err := d.open(); err != nil {
		return err
	}
	for {
		more, err := d.more()
		if !more || err != nil {
			return err
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		if fieldIs(tok.String(), "Records") {
			err = d.records(&ev.Records)
		} else {
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// records decodes Records into *dst as encoding/json decodes an array into
// a slice: into the elements already there, then new ones, truncated to
// the array's length (an empty array is an empty, non-nil slice).
func (d *eventDecoder) records(dst *[]events.DynamoDBEventRecord) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		*dst = nil
		return err
	case '[':
	default:
		return d.wrongType("Records", k)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return err
	}
	s := *dst
	i := 0
	for d.dec.PeekKind() != ']' {
		if i >= cap(s) {
			s = slices.Grow(s, 1)
		}
		if i >= len(s) {
			s = s[:i+1]
		}
		if err := d.record(&s[i]); err != nil {
			return err
		}
		i++
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return err
	}
	if i < len(s) {
		s = s[:i]
	}
	if i == 0 {
		s = make([]events.DynamoDBEventRecord, 0)
	}
	*dst = s
	return nil
}

// wrongType consumes a value of the wrong type and says so.
func (d *eventDecoder) wrongType(what string, k jsontext.Kind) error {
	if err := d.dec.SkipValue(); err != nil {
		return err
	}
	return errType(what, k)
}

func (d *eventDecoder) record(r *events.DynamoDBEventRecord) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		return err
	case '{':
	default:
		return d.wrongType("a record", k)
	}
	if err := d.open(); err != nil {
		return err
	}
	for {
		more, err := d.more()
		if !more || err != nil {
			return err
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name := tok.String(); {
		case fieldIs(name, "awsRegion"):
			err = d.str("awsRegion", &r.AWSRegion)
		case fieldIs(name, "dynamodb"):
			err = d.change(&r.Change)
		case fieldIs(name, "eventID"):
			err = d.str("eventID", &r.EventID)
		case fieldIs(name, "eventName"):
			err = d.str("eventName", &r.EventName)
		case fieldIs(name, "eventSource"):
			err = d.str("eventSource", &r.EventSource)
		case fieldIs(name, "eventVersion"):
			err = d.str("eventVersion", &r.EventVersion)
		case fieldIs(name, "eventSourceARN"):
			err = d.str("eventSourceARN", &r.EventSourceArn)
		case fieldIs(name, "userIdentity"):
			err = d.identity(&r.UserIdentity)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// str decodes a string field (null leaves it as it is).
func (d *eventDecoder) str(what string, dst *string) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		return err
	case '"':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		*dst = tok.String()
		return nil
	default:
		return d.wrongType(what, k)
	}
}

func (d *eventDecoder) identity(dst **events.DynamoDBUserIdentity) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		*dst = nil
		return err
	case '{':
	default:
		return d.wrongType("userIdentity", k)
	}
	if *dst == nil {
		*dst = &events.DynamoDBUserIdentity{}
	}
	u := *dst
	if err := d.open(); err != nil {
		return err
	}
	for {
		more, err := d.more()
		if !more || err != nil {
			return err
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name := tok.String(); {
		case fieldIs(name, "type"):
			err = d.str("type", &u.Type)
		case fieldIs(name, "principalId"):
			err = d.str("principalId", &u.PrincipalID)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *eventDecoder) change(c *events.DynamoDBStreamRecord) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		return err
	case '{':
	default:
		return d.wrongType("dynamodb", k)
	}
	if err := d.open(); err != nil {
		return err
	}
	for {
		more, err := d.more()
		if !more || err != nil {
			return err
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		switch name := tok.String(); {
		case fieldIs(name, "ApproximateCreationDateTime"):
			err = d.epoch(&c.ApproximateCreationDateTime)
		case fieldIs(name, "Keys"):
			err = d.image("Keys", &c.Keys)
		case fieldIs(name, "NewImage"):
			err = d.image("NewImage", &c.NewImage)
		case fieldIs(name, "OldImage"):
			err = d.image("OldImage", &c.OldImage)
		case fieldIs(name, "SequenceNumber"):
			err = d.str("SequenceNumber", &c.SequenceNumber)
		case fieldIs(name, "SizeBytes"):
			err = d.int64("SizeBytes", &c.SizeBytes)
		case fieldIs(name, "StreamViewType"):
			err = d.str("StreamViewType", &c.StreamViewType)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

func (d *eventDecoder) int64(what string, dst *int64) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		return err
	case '0':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		n, err := strconv.ParseInt(tok.String(), 10, 64)
		if err != nil {
			return fmt.Errorf("stream: %s: %w", what, err)
		}
		*dst = n
		return nil
	default:
		return d.wrongType(what, k)
	}
}

// epoch decodes ApproximateCreationDateTime as aws-lambda-go's
// SecondsEpochTime does: a float64 of seconds (null is 0), split into
// seconds and nanoseconds the same way.
func (d *eventDecoder) epoch(dst *events.SecondsEpochTime) error {
	var epoch float64
	switch k := d.dec.PeekKind(); k {
	case 'n':
		if _, err := d.dec.ReadToken(); err != nil {
			return err
		}
	case '0':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		if epoch, err = strconv.ParseFloat(tok.String(), 64); err != nil {
			return fmt.Errorf("stream: ApproximateCreationDateTime: %w", err)
		}
	default:
		return d.wrongType("ApproximateCreationDateTime", k)
	}
	const secondsToNanoSecondsFactor = 1000000000
	epochSec := int64(epoch)
	epochNano := int64((epoch - float64(epochSec)) * float64(secondsToNanoSecondsFactor))
	*dst = events.SecondsEpochTime{Time: time.Unix(epochSec, epochNano)}
	return nil
}

// image decodes Keys, NewImage or OldImage: into the map already there
// (made when nil), each member an attribute value; null empties it.
func (d *eventDecoder) image(what string, dst *map[string]events.DynamoDBAttributeValue) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		*dst = nil
		return err
	case '{':
	default:
		return d.wrongType(what, k)
	}
	hint := &d.sizes[0]
	switch what {
	case "NewImage":
		hint = &d.sizes[1]
	case "OldImage":
		hint = &d.sizes[2]
	}
	if *dst == nil {
		*dst = make(map[string]events.DynamoDBAttributeValue, *hint)
	}
	m := *dst
	defer func() { *hint = len(m) }()
	if err := d.open(); err != nil {
		return err
	}
	for {
		more, err := d.more()
		if !more || err != nil {
			return err
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		name := d.name(tok)
		v, err := d.attr()
		if err != nil {
			return fmt.Errorf("stream: %s.%s: %w", what, name, err)
		}
		m[name] = v
	}
}

// errSyntax marks an error of the JSON itself (or a number no float64
// holds): the whole payload is refused, whatever the member.
type errSyntax struct{ err error }

func (e errSyntax) Error() string { return e.err.Error() }
func (e errSyntax) Unwrap() error { return e.err }

func syntax(err error) error {
	if err == nil {
		return nil
	}
	var s errSyntax
	if errors.As(err, &s) {
		return err
	}
	return errSyntax{err}
}

// attr decodes one attribute value, {"<type>": <value>}, as aws-lambda-go's
// DynamoDBAttributeValue.UnmarshalJSON does.
func (d *eventDecoder) attr() (events.DynamoDBAttributeValue, error) {
	if k := d.dec.PeekKind(); k != '{' {
		if err := d.walk(); err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if k == 'n' {
			return events.DynamoDBAttributeValue{}, errors.New("DynamoDBAttributeValue: does not contain a map")
		}
		return events.DynamoDBAttributeValue{}, fmt.Errorf("DynamoDBAttributeValue: a JSON %s, not an object", kindName(k))
	}
	return d.attrObject()
}

// attrObject decodes {"<type>": <value>} with the decoder at its {. A
// type member that comes again replaces the earlier one (and its error),
// as in the map aws-lambda-go parses it into; two different type members
// are an error.
func (d *eventDecoder) attrObject() (events.DynamoDBAttributeValue, error) {
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	var (
		label string
		v     events.DynamoDBAttributeValue
		verr  error
		n     int
		mixed bool
	)
	for d.dec.PeekKind() != '}' {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return events.DynamoDBAttributeValue{}, syntax(err)
		}
		name := tok.String()
		if n > 0 && name != label {
			mixed = true
		}
		label = typeLabel(name)
		n++
		v, verr = d.attrPayload(label)
		if _, ok := verr.(errSyntax); ok {
			return events.DynamoDBAttributeValue{}, verr
		}
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	switch {
	case n == 0 || mixed:
		return events.DynamoDBAttributeValue{}, errors.New("DynamoDBAttributeValue: map must contain a single type")
	case verr != nil:
		return events.DynamoDBAttributeValue{}, verr
	}
	return v, nil
}

// typeLabel returns an attribute value's type member name without
// allocating for the known ones (the name read is only compared, so
// reading it allocates nothing either).
func typeLabel(name string) string {
	switch name {
	case "S":
		return "S"
	case "N":
		return "N"
	case "B":
		return "B"
	case "BOOL":
		return "BOOL"
	case "NULL":
		return "NULL"
	case "SS":
		return "SS"
	case "NS":
		return "NS"
	case "BS":
		return "BS"
	case "L":
		return "L"
	case "M":
		return "M"
	}
	return strings.Clone(name)
}

// attrPayload decodes the value of a type member. A value of the wrong
// JSON type is consumed (checked with walk) and an error returned; the
// caller decides whether it stands.
func (d *eventDecoder) attrPayload(label string) (events.DynamoDBAttributeValue, error) {
	k := d.dec.PeekKind()
	wrong := func(msg string) (events.DynamoDBAttributeValue, error) {
		if err := d.walk(); err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.DynamoDBAttributeValue{}, errors.New("DynamoDBAttributeValue: " + msg)
	}
	switch label {
	case "NULL":
		if err := d.walk(); err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewNullAttribute(), nil
	case "S", "N":
		if k != '"' {
			return wrong(label + " type should contain a string")
		}
		s, err := d.readString()
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if label == "S" {
			return events.NewStringAttribute(s), nil
		}
		return events.NewNumberAttribute(s), nil
	case "BOOL":
		if k != 't' && k != 'f' {
			return wrong("BOOL type should contain a boolean")
		}
		tok, err := d.dec.ReadToken()
		if err != nil {
			return events.DynamoDBAttributeValue{}, syntax(err)
		}
		return events.NewBooleanAttribute(tok.Bool()), nil
	case "B":
		if k != '"' {
			return wrong("B type should contain a base64 string")
		}
		s, err := d.readString()
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		return events.NewBinaryAttribute(b), nil
	case "SS", "NS":
		if k != '[' {
			return wrong(label + " type should contain a list of strings")
		}
		ss, ok, err := d.stringList()
		switch {
		case err != nil:
			return events.DynamoDBAttributeValue{}, err
		case !ok:
			return events.DynamoDBAttributeValue{}, errors.New("DynamoDBAttributeValue: " + label + " type should contain a list of strings")
		case label == "SS":
			return events.NewStringSetAttribute(ss), nil
		}
		return events.NewNumberSetAttribute(ss), nil
	case "BS":
		if k != '[' {
			return wrong("BS type should contain a list of base64 strings")
		}
		ss, ok, err := d.stringList()
		switch {
		case err != nil:
			return events.DynamoDBAttributeValue{}, err
		case !ok: // aws-lambda-go panics on a member that is not a string
			return events.DynamoDBAttributeValue{}, errors.New("DynamoDBAttributeValue: BS type should contain a list of base64 strings")
		}
		bs := make([][]byte, len(ss))
		for i, s := range ss {
			if bs[i], err = base64.StdEncoding.DecodeString(s); err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
		}
		return events.NewBinarySetAttribute(bs), nil
	case "L":
		if k != '[' {
			return wrong("L type should contain a list")
		}
		return d.list()
	case "M":
		if k != '{' {
			return wrong("M type should contain a map")
		}
		return d.attrMap()
	}
	if err := d.walk(); err != nil {
		return events.DynamoDBAttributeValue{}, err
	}
	return events.DynamoDBAttributeValue{}, events.UnsupportedDynamoDBTypeError{Type: label}
}

func (d *eventDecoder) readString() (string, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return "", syntax(err)
	}
	return tok.String(), nil
}

// stringList reads a JSON array; ok is false when a member is not a
// string (the list then holds the strings before it).
func (d *eventDecoder) stringList() (ss []string, ok bool, err error) {
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, false, syntax(err)
	}
	ss, ok = []string{}, true
	for d.dec.PeekKind() != ']' {
		if !ok || d.dec.PeekKind() != '"' {
			ok = false
			if err := d.walk(); err != nil {
				return nil, false, err
			}
			continue
		}
		s, err := d.readString()
		if err != nil {
			return nil, false, err
		}
		ss = append(ss, s)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return nil, false, syntax(err)
	}
	return ss, ok, nil
}

// list decodes an L value: each member an attribute value object.
func (d *eventDecoder) list() (events.DynamoDBAttributeValue, error) {
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	l := []events.DynamoDBAttributeValue{}
	var lerr error
	for d.dec.PeekKind() != ']' {
		if lerr != nil || d.dec.PeekKind() != '{' {
			if err := d.walk(); err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			lerr = cmpOr(lerr, errors.New("DynamoDBAttributeValue: element of a list is not an DynamoDBAttributeValue"))
			continue
		}
		v, err := d.attrObject()
		if _, ok := err.(errSyntax); ok {
			return events.DynamoDBAttributeValue{}, err
		}
		if err != nil {
			lerr = errors.New("DynamoDBAttributeValue: unmarshal of child DynamoDBAttributeValue failed")
			continue
		}
		l = append(l, v)
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	if lerr != nil {
		return events.DynamoDBAttributeValue{}, lerr
	}
	return events.NewListAttribute(l), nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// attrMap decodes an M value: each member an attribute value object. A
// member that comes again replaces the earlier one, error included.
func (d *eventDecoder) attrMap() (events.DynamoDBAttributeValue, error) {
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	m := map[string]events.DynamoDBAttributeValue{}
	var bad map[string]error
	for d.dec.PeekKind() != '}' {
		tok, err := d.dec.ReadToken()
		if err != nil {
			return events.DynamoDBAttributeValue{}, syntax(err)
		}
		name := d.name(tok)
		var v events.DynamoDBAttributeValue
		if d.dec.PeekKind() != '{' {
			if err := d.walk(); err != nil {
				return events.DynamoDBAttributeValue{}, err
			}
			err = errors.New("DynamoDBAttributeValue: element of a map is not an DynamoDBAttributeValue")
		} else if v, err = d.attrObject(); err != nil {
			if _, ok := err.(errSyntax); ok {
				return events.DynamoDBAttributeValue{}, err
			}
			err = errors.New("DynamoDBAttributeValue: unmarshal of child DynamoDBAttributeValue failed")
		}
		if err != nil {
			if bad == nil {
				bad = map[string]error{}
			}
			bad[name] = err
			delete(m, name)
			continue
		}
		delete(bad, name)
		m[name] = v
	}
	if _, err := d.dec.ReadToken(); err != nil {
		return events.DynamoDBAttributeValue{}, syntax(err)
	}
	for _, err := range bad {
		return events.DynamoDBAttributeValue{}, err
	}
	return events.NewMapAttribute(m), nil
}

// walk consumes a value inside an attribute value, refusing a number no
// float64 holds (aws-lambda-go parses the whole attribute value into
// interface{} first, where such a number fails it).
func (d *eventDecoder) walk() error {
	switch d.dec.PeekKind() {
	case '{', '[':
		depth := d.dec.StackDepth()
		if _, err := d.dec.ReadToken(); err != nil {
			return syntax(err)
		}
		for d.dec.StackDepth() > depth {
			tok, err := d.dec.ReadToken()
			if err != nil {
				return syntax(err)
			}
			if tok.Kind() == '0' {
				if err := checkFloat(tok.String()); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		tok, err := d.dec.ReadToken()
		if err != nil {
			return syntax(err)
		}
		if tok.Kind() == '0' {
			return checkFloat(tok.String())
		}
		return nil
	}
}

func checkFloat(s string) error {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return syntax(fmt.Errorf("stream: number %s does not fit a float64: %w", s, err))
	}
	return nil
}

package lambdajson

import (
	"bytes"
	"errors"
	"io"

	"github.com/aws/aws-lambda-go/events"
	"github.com/go-json-experiment/json/jsontext"
)

// Change is what DynamoDB writes into a Kinesis record's data for one
// change, as stream reads it: the record's members (AWSRegion, EventID,
// EventName, EventSource, UserIdentity; Change's Keys, NewImage, OldImage
// and SizeBytes), and those only this format has.
type Change struct {
	Record       events.DynamoDBEventRecord
	RecordFormat string
	// Time is dynamodb.ApproximateCreationDateTime as a json.Number holds
	// it, and Precision dynamodb.ApproximateCreationDateTimePrecision.
	Time, Precision string
}

// DecodeChange decodes a Kinesis record's data in one pass over its
// tokens, with exactly the values json.Unmarshal gives into the struct
// stream reads it with (awsRegion, eventID, eventName, userIdentity,
// recordFormat, tableName and eventSource; dynamodb's
// ApproximateCreationDateTime as a json.Number,
// ApproximateCreationDateTimePrecision, Keys, NewImage, OldImage and
// SizeBytes): the same values for every blob that accepts, an error for
// every blob it rejects, under the rules Decode keeps. Its errors say
// less than encoding/json's: a caller that reports one decodes the blob
// again with encoding/json for the reason.
func DecodeChange(blob []byte) (Change, error) {
	d := eventDecoder{dec: jsontext.NewDecoder(bytes.NewReader(blob), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	var c Change
	switch k := d.dec.PeekKind(); k {
	case 'n':
		if _, err := d.dec.ReadToken(); err != nil {
			return Change{}, err
		}
	case '{':
		if err := d.kinesisChange(&c); err != nil {
			return Change{}, err
		}
	default:
		if err := d.dec.SkipValue(); err != nil {
			return Change{}, err
		}
		return Change{}, errors.New("stream: the change is not a JSON object")
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("stream: the change has data after its JSON value")
		}
		return Change{}, err
	}
	return c, nil
}

func (d *eventDecoder) kinesisChange(c *Change) error {
	if err := d.open(); err != nil {
		return err
	}
	r := &c.Record
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
		case fieldIs(name, "eventID"):
			err = d.str("eventID", &r.EventID)
		case fieldIs(name, "eventName"):
			err = d.str("eventName", &r.EventName)
		case fieldIs(name, "userIdentity"):
			err = d.identity(&r.UserIdentity)
		case fieldIs(name, "recordFormat"):
			err = d.str("recordFormat", &c.RecordFormat)
		case fieldIs(name, "tableName"):
			var table string // read for its type only
			err = d.str("tableName", &table)
		case fieldIs(name, "eventSource"):
			err = d.str("eventSource", &r.EventSource)
		case fieldIs(name, "dynamodb"):
			err = d.kinesisDynamodb(c)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// kinesisDynamodb decodes the dynamodb member (null leaves it as it is).
func (d *eventDecoder) kinesisDynamodb(c *Change) error {
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
	ch := &c.Record.Change
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
			err = d.number("ApproximateCreationDateTime", &c.Time)
		case fieldIs(name, "ApproximateCreationDateTimePrecision"):
			err = d.str("ApproximateCreationDateTimePrecision", &c.Precision)
		case fieldIs(name, "Keys"):
			err = d.image("Keys", &ch.Keys)
		case fieldIs(name, "NewImage"):
			err = d.image("NewImage", &ch.NewImage)
		case fieldIs(name, "OldImage"):
			err = d.image("OldImage", &ch.OldImage)
		case fieldIs(name, "SizeBytes"):
			err = d.int64("SizeBytes", &ch.SizeBytes)
		default:
			err = d.dec.SkipValue()
		}
		if err != nil {
			return err
		}
	}
}

// number decodes a value as encoding/json decodes it into a json.Number:
// a number's text, or a string's when it is a valid JSON number; null
// leaves it as it is.
func (d *eventDecoder) number(what string, dst *string) error {
	switch k := d.dec.PeekKind(); k {
	case 'n':
		_, err := d.dec.ReadToken()
		return err
	case '0', '"':
		tok, err := d.dec.ReadToken()
		if err != nil {
			return err
		}
		s := tok.String()
		if k == '"' && !validNumber(s) {
			return errors.New("stream: " + what + ": a string that is not a number")
		}
		*dst = s
		return nil
	default:
		return d.wrongType(what, k)
	}
}

// validNumber reports whether s is a JSON number (RFC 8259's grammar,
// which encoding/json checks a string against before it makes it a
// json.Number).
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		if s = s[1:]; s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		for s = s[1:]; s != "" && '0' <= s[0] && s[0] <= '9'; s = s[1:] {
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		for s = s[2:]; s != "" && '0' <= s[0] && s[0] <= '9'; s = s[1:] {
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			if s = s[1:]; s == "" {
				return false
			}
		}
		for ; s != "" && '0' <= s[0] && s[0] <= '9'; s = s[1:] {
		}
	}
	return s == ""
}

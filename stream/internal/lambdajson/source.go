package lambdajson

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// Source is the eventSource of a payload's first record: "aws:dynamodb"
// for a DynamoDB stream's event, "aws:kinesis" for a Kinesis data
// stream's; "" when the first record has none, or the payload is not an
// object with Records. It reads the payload only as far as that member,
// so that the one decoder the payload calls for reads it whole. Member
// names match as encoding/json matches them.
func Source(payload []byte) string {
	dec := jsontext.NewDecoder(bytes.NewReader(payload), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return ""
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return ""
		}
		if !fieldIs(name.String(), "Records") {
			if dec.SkipValue() != nil {
				return ""
			}
			continue
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
			return ""
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
			return ""
		}
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return ""
			}
			if fieldIs(name.String(), "eventSource") && dec.PeekKind() == '"' {
				tok, err := dec.ReadToken()
				if err != nil {
					return ""
				}
				return tok.String()
			}
			if dec.SkipValue() != nil {
				return ""
			}
		}
		return ""
	}
	return ""
}

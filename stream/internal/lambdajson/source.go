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
	if !opens(dec, '{') || !member(dec, "Records") || !opens(dec, '[') || !opens(dec, '{') || !member(dec, "eventSource") || dec.PeekKind() != '"' {
		return ""
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return ""
	}
	return tok.String()
}

// opens reads the token that opens an object ('{') or an array ('[').
func opens(dec *jsontext.Decoder, kind jsontext.Kind) bool {
	tok, err := dec.ReadToken()
	return err == nil && tok.Kind() == kind
}

// member reads an object's members up to the one named name, leaving its
// value next; false when the object ends without it.
func member(dec *jsontext.Decoder, name string) bool {
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return false
		}
		if fieldIs(tok.String(), name) {
			return true
		}
		if dec.SkipValue() != nil {
			return false
		}
	}
	return false
}

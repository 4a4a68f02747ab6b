package eventbus

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Entry is one event to publish, in a neutral shape: the caller maps its
// own domain events to entries (Source per domain, DetailType = event
// name, Detail = the JSON envelope).
type Entry struct {
	// Source identifies the producer, e.g. "dynastream.collab". Required
	// by EventBridge.
	Source string
	// DetailType is the event name, e.g. "InviteAccepted". Required by
	// EventBridge.
	DetailType string
	// Detail is the event body, a JSON object. It should carry a
	// deterministic event id: delivery is at least once and consumers
	// dedupe on that id.
	Detail []byte
	// Time is the event's time stamp; the zero value leaves it unset
	// (EventBridge then uses the time of the PutEvents call). It travels
	// in epoch seconds with millisecond precision.
	Time time.Time
	// Resources are ARNs the event concerns (optional).
	Resources []string
	// TraceHeader is an AWS X-Ray trace header (optional).
	TraceHeader string
}

// TimeSize is what a set Time counts for in an entry's size.
const TimeSize = 14

// Size is the entry's size as EventBridge counts it against the PutEvents
// limit, from "Calculating Amazon EventBridge PutEvents event entry size"
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html):
//
//   - Time, if specified, is 14 bytes;
//   - Source and DetailType are the number of bytes of their UTF-8
//     encoded forms;
//   - Detail, if specified, is the number of bytes of its UTF-8 encoded
//     form;
//   - each entry of Resources, if specified, is the number of bytes of its
//     UTF-8 encoded form.
//
// Nothing else counts: neither EventBusName nor TraceHeader, nor the JSON
// keys and quoting of the request. Go strings are bytes; the SDK's JSON
// encoder sends each byte that is not valid UTF-8 as U+FFFD, which is 3
// bytes on the service side, so such a byte counts 3 here (valid UTF-8,
// the normal case, counts len bytes).
func (e Entry) Size() int {
	n := 0
	if !e.Time.IsZero() {
		n += TimeSize
	}
	n += utf8Size(e.Source) + utf8Size(e.DetailType) + utf8SizeBytes(e.Detail)
	for _, r := range e.Resources {
		n += utf8Size(r)
	}
	return n
}

// utf8Size is the length of s once each invalid byte has become U+FFFD,
// as the SDK's JSON encoder (smithy-go) writes it.
func utf8Size(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += utf8.RuneLen(utf8.RuneError)
		} else {
			n += size
		}
		i += size
	}
	return n
}

// TooLargeError reports an entry that is larger than the PutEvents limit
// on its own (Publisher.MaxBytes): it can never be published as it is and
// is never sent. It is permanent: dead-letter it, or give the Publisher a
// TooLarge hook that stores the payload elsewhere (S3) and publishes a
// reference (a claim check).
type TooLargeError struct {
	Source     string
	DetailType string
	// Size is the entry's size (Entry.Size), Limit the limit it exceeds.
	Size  int
	Limit int
	// Err says why the TooLarge hook's entry did not help, if there was one.
	Err error
}

func (e *TooLargeError) Error() string {
	msg := fmt.Sprintf("eventbus: entry %s/%s is %d bytes, over the %d-byte PutEvents limit: shrink it, or store the payload elsewhere and publish a reference (Publisher.TooLarge)",
		e.Source, e.DetailType, e.Size, e.Limit)
	if e.Err != nil {
		msg += "; " + e.Err.Error()
	}
	return msg
}

func (e *TooLargeError) Unwrap() error { return e.Err }

// utf8SizeBytes is utf8Size for a byte slice: no copy for valid UTF-8
// (the normal case), utf8Size's count otherwise.
func utf8SizeBytes(b []byte) int {
	if utf8.Valid(b) {
		return len(b)
	}
	return utf8Size(string(b))
}

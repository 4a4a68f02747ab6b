package lambdajson

import (
	"bytes"
	"strings"
	"testing"
)

// Source names the first record's eventSource, reading no further, and
// "" for anything else.
func TestSource(t *testing.T) {
	for payload, want := range map[string]string{
		`{"Records":[{"eventID":"1","eventSource":"aws:dynamodb","dynamodb":{}}]}`:      "aws:dynamodb",
		`{"Records":[{"kinesis":{"data":"e30="},"EventSource":"aws:kinesis"}]}`:         "aws:kinesis",
		`{"other":{"eventSource":"aws:kinesis"},"Records":[{"eventSource":"aws:sqs"}]}`: "aws:sqs",
		`{"Records":[{"eventSource":"aws:kinesis"}, not JSON past here`:                 "aws:kinesis",
		`{"Records":[{"eventID":"1"},{"eventSource":"aws:kinesis"}]}`:                   "",
		`{"Records":[{"eventSource":7}]}`:                                               "",
		`{"Records":[]}`:                                                                "",
		`{"Records":{}}`:                                                                "",
		`[]`:                                                                            "",
		`null`:                                                                          "",
		``:                                                                              "",
		`{"Records":[{"eventSource":"aws:dynamodb"`:                                     "aws:dynamodb",
	} {
		if got := Source([]byte(payload)); got != want {
			t.Errorf("Source(%s) = %q, want %q", payload, got, want)
		}
	}
}

// Source reads a payload only as far as its first record's eventSource:
// beside Decode of the same 100-record batch it costs next to nothing
// (LambdaHandler calls both for every DynamoDB stream event).
func BenchmarkSource(b *testing.B) {
	one := fixtures(b)[0]
	rec := one[bytes.IndexByte(one, '[')+1 : bytes.LastIndexByte(one, ']')]
	batch := []byte(`{"Records":[` + strings.TrimSpace(strings.Repeat(string(rec)+",", 100)))
	batch = append(batch[:len(batch)-1], "]}"...)
	if _, err := Decode(batch); err != nil {
		b.Fatal(err)
	}
	b.Run("Source", func(b *testing.B) {
		b.SetBytes(int64(len(batch)))
		for b.Loop() {
			if Source(batch) != "aws:dynamodb" {
				b.Fatal("not aws:dynamodb")
			}
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(batch)))
		for b.Loop() {
			if _, err := Decode(batch); err != nil {
				b.Fatal(err)
			}
		}
	})
}

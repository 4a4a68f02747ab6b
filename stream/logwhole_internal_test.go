package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// A dead letter logged as the only copy of it comes in lines a
// CloudWatch Logs event can hold (256 KB), which joined in order are the
// dead letter whole.
func TestLogWholeInParts(t *testing.T) {
	for _, consumer := range []string{"c", "cc"} { // every cut on either byte of a rune
		logWholeInParts(t, consumer)
	}
}

func logWholeInParts(t *testing.T, consumer string) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	big := strings.Repeat("é", 250<<10) + "x" + strings.Repeat("é", 10) // 500 KB, cut at odd and even offsets
	dl := DeadLetter{Consumer: consumer, FirstSequenceNumber: "1", Event: events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{
		Change: events.DynamoDBStreamRecord{SequenceNumber: "1", NewImage: map[string]events.DynamoDBAttributeValue{"pad": events.NewStringAttribute(big)}}}}}}
	logWhole(log, dl, errors.New("too large"))
	var joined strings.Builder
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for i, l := range lines {
		if len(l) > 256<<10 {
			t.Errorf("line %d is %d bytes", i, len(l))
		}
		var line struct {
			Part, Parts int
			DeadLetter  string `json:"deadLetter"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Part != i+1 || line.Parts != len(lines) {
			t.Fatalf("line %d: part %d of %d, %v", i, line.Part, line.Parts, err)
		}
		joined.WriteString(line.DeadLetter)
	}
	var back DeadLetter
	if err := json.Unmarshal([]byte(joined.String()), &back); err != nil || back.Event.Records[0].Change.NewImage["pad"].String() != big {
		t.Fatalf("%d lines joined do not read back as the dead letter: %v", len(lines), err)
	}
	if len(lines) < 3 {
		t.Errorf("%d lines for %d bytes", len(lines), len(big))
	}
}

package emf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dynastream/dynastream/emf"
)

func TestLinesAreValidEMF(t *testing.T) {
	var buf bytes.Buffer
	l := &emf.Logger{Namespace: "dynastream", Service: "projector", W: &buf, Now: func() time.Time { return time.UnixMilli(1795241100123) }}
	if err := l.ColdStart("projector-fn"); err != nil {
		t.Fatal(err)
	}
	_ = l.ColdStart("projector-fn") // only once
	s := l.NewSet("consumer", "projector").Add("Records", emf.Count, 100).Add("DurationMs", emf.Milliseconds, 12.5).
		Add("LagMs", emf.Milliseconds, 3).Add("LagMs", emf.Milliseconds, 4).Property("requestId", "r-1")
	if err := l.Flush(s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines: %s", len(lines), buf.String())
	}
	for _, line := range lines {
		if err := emf.Validate([]byte(line)); err != nil {
			t.Errorf("%v: %s", err, line)
		}
	}
	var doc map[string]any
	_ = json.Unmarshal([]byte(lines[1]), &doc)
	if doc["service"] != "projector" || doc["Records"] != 100.0 || len(doc["LagMs"].([]any)) != 2 || doc["requestId"] != "r-1" {
		t.Errorf("doc %v", doc)
	}
}

// Validate refuses what CloudWatch would drop.
func TestValidateRefuses(t *testing.T) {
	ok := `{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["service"]],"Metrics":[{"Name":"M","Unit":"Count"}]}]},"service":"s","M":1}`
	if err := emf.Validate([]byte(ok)); err != nil {
		t.Fatalf("valid line refused: %v", err)
	}
	many := make([]string, 31)
	for i := range many {
		many[i] = fmt.Sprintf("d%d", i)
	}
	dims, _ := json.Marshal(many)
	for name, line := range map[string]string{
		"not JSON":          `nope`,
		"no _aws":           `{"M":1}`,
		"no timestamp":      strings.Replace(ok, `"Timestamp":1,`, ``, 1),
		"no namespace":      strings.Replace(ok, `"Namespace":"n",`, ``, 1),
		"bad unit":          strings.Replace(ok, `"Count"`, `"Counts"`, 1),
		"missing value":     strings.Replace(ok, `,"M":1}`, `}`, 1),
		"string value":      strings.Replace(ok, `"M":1`, `"M":"1"`, 1),
		"missing dimension": strings.Replace(ok, `"service":"s",`, ``, 1),
		"31 dimensions":     strings.Replace(ok, `[["service"]]`, `[`+string(dims)+`]`, 1),
		"no metrics":        strings.Replace(ok, `[{"Name":"M","Unit":"Count"}]`, `[]`, 1),
	} {
		if err := emf.Validate([]byte(line)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func Example() {
	l := &emf.Logger{Namespace: "dynastream", Service: "writer", W: os.Stdout, Now: func() time.Time { return time.UnixMilli(1795241100000) }}
	_ = l.Flush(l.NewSet("route", "POST /rooms", "status", "201").Add("Requests", emf.Count, 1).Add("LatencyMs", emf.Milliseconds, 8))
	// Output:
	// {"LatencyMs":8,"Requests":1,"_aws":{"CloudWatchMetrics":[{"Dimensions":[["service","route","status"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"LatencyMs","Unit":"Milliseconds"}],"Namespace":"dynastream"}],"Timestamp":1795241100000},"route":"POST /rooms","service":"writer","status":"201"}
}

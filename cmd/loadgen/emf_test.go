package main

import (
	"strings"
	"testing"
)

func TestReadEMF(t *testing.T) {
	log := strings.Join([]string{
		`{"time":"2026-11-24T00:00:00Z","level":"INFO","msg":"not a metric"}`,
		`{"_aws":{"Timestamp":1795500000000,"CloudWatchMetrics":[{"Namespace":"dynastream","Dimensions":[["service","consumer"]],"Metrics":[{"Name":"Records","Unit":"Count"},{"Name":"FailedRecords","Unit":"Count"},{"Name":"Errors","Unit":"Count"},{"Name":"DurationMs","Unit":"Milliseconds"},{"Name":"IteratorAge","Unit":"Milliseconds"}]}]},"service":"projector","consumer":"projector","Records":10,"FailedRecords":1,"Errors":0,"DurationMs":12.5,"IteratorAge":300}`,
		`{"_aws":{"Timestamp":1795500000001,"CloudWatchMetrics":[{"Namespace":"dynastream","Dimensions":[["service","consumer"]],"Metrics":[{"Name":"Records","Unit":"Count"},{"Name":"DurationMs","Unit":"Milliseconds"}]}]},"service":"projector","consumer":"projector","Records":[5,5],"DurationMs":[1,3]}`,
		`{"_aws":{"Timestamp":1795500000002,"CloudWatchMetrics":[{"Namespace":"dynastream","Dimensions":[["service","consumer"]],"Metrics":[{"Name":"DeadLettered","Unit":"Count"}]}]},"service":"notifier","consumer":"notifier","DeadLettered":2}`,
		`{"_aws":{"Timestamp":1795500000003,"CloudWatchMetrics":[{"Namespace":"dynastream","Dimensions":[["service","route","status"]],"Metrics":[{"Name":"Requests","Unit":"Count"},{"Name":"LatencyMs","Unit":"Milliseconds"}]}]},"service":"writer","route":"POST /rooms","status":"201","Requests":1,"LatencyMs":4}`,
		`{"_aws":{"Timestamp":1795500000004,"CloudWatchMetrics":[{"Namespace":"dynastream","Dimensions":[["service"]],"Metrics":[{"Name":"Requests","Unit":"Things"}]}]},"service":"writer","Requests":1}`,
	}, "\n")
	e, err := readEMF(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	p := e.Consumers["projector"]
	if e.Lines != 5 || e.Invalid != 1 || p.Calls != 3 || p.Records != 20 || p.FailedRecords != 1 || p.Duration.N != 3 || p.IteratorAge.N != 1 ||
		e.Consumers["notifier"].DeadLettered != 2 || e.Writer.Requests != 1 || e.Writer.ByStatus["201"] != 1 || e.Writer.Latency.P50Ms != 4 {
		t.Errorf("%+v", e)
	}
	var out strings.Builder
	e.print(&out)
	if !strings.Contains(out.String(), "projector") || !strings.Contains(out.String(), "201: 1") {
		t.Errorf("print:\n%s", out.String())
	}
}

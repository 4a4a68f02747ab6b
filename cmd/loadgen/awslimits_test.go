package main

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/projections"
)

// -aws-limits takes a scale as 0.01 or 1/100, and the local stack only.
func TestAWSLimitsFlag(t *testing.T) {
	for _, v := range []string{"0.01", "1/100"} {
		c, err := parseFlags([]string{"-aws-limits", v})
		if err != nil || c.limits == nil || c.limits.Scale != 0.01 {
			t.Errorf("-aws-limits %s: %+v %v", v, c.limits, err)
		}
	}
	for _, args := range [][]string{{"-aws-limits", "0"}, {"-aws-limits", "lots"}, {"-aws-limits", "0.01", "-writer", "http://127.0.0.1:9", "-dynamodb", "http://127.0.0.1:9"}} {
		if _, err := parseFlags(args); err == nil || !strings.Contains(err.Error(), "-aws-limits") {
			t.Errorf("%q: %v, want an error naming -aws-limits", args, err)
		}
	}
}

// The report's line and table say what a Limiter did: here a key written
// past a hundredth of AWS's units (a fake DynamoDB answers behind it: the
// line's counting, not DynamoDB Local, is under test).
func TestAWSLimitsReport(t *testing.T) {
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".DescribeTable") {
			w.Write([]byte(`{"Table":{"TableName":"load","KeySchema":[{"AttributeName":"PK","KeyType":"HASH"}]}}`))
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer fake.Close()
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	lim, err := ddblocal.NewLimiter(fake.URL, ddblocal.Limits{Scale: 0.01, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	db, _ := ddblocal.Clients(lim.Endpoint)
	db = dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	for range 12 { // 10 go through, 2 are throttled
		_, _ = db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("load"),
			Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "RECIPE#hot"}}})
	}
	r := awsLimitsOf(lim, [2][]ddblocal.KeyCount{}, 0, nil)
	if want := "aws limits: 1/100 of AWS's per-partition limits: 2 throttled requests on 1 keys, 0 unprocessed keys retried, 0 transaction conflicts retried"; r.line() != want {
		t.Errorf("line %q\nwant %q", r.line(), want)
	}
	if len(r.Keys) != 1 || r.Keys[0].Key != "RECIPE#hot" || r.Keys[0].Requests != 12 || r.Keys[0].Throttled != 2 {
		t.Fatalf("keys %+v", r.Keys)
	}
	var b bytes.Buffer
	r.print(&b)
	if !strings.Contains(b.String(), "RECIPE#hot") || !strings.Contains(b.String(), "2 (16.7%)") {
		t.Errorf("printed:\n%s", b.String())
	}
	// the measured phases: a second later, the hot recipe (pinned) and a
	// week's key (one for all) each written 12 times, 2 throttled
	before := lim.KeyCounts()
	now = now.Add(time.Second)
	for _, pk := range []string{"RECIPE#hot", "TRENDING#2026-W02"} {
		for range 12 {
			_, _ = db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("load"),
				Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}}})
		}
	}
	r = awsLimitsOf(lim, [2][]ddblocal.KeyCount{before, lim.KeyCounts()}, 1, map[string]string{"RECIPE#hot": "the hot recipe"})
	if len(r.Steady) != 2 || len(r.Over) != 2 || r.Steady[0].Requests != 12 || r.Steady[0].Throttled != 2 || !r.Over[0].TakesGrowth {
		t.Fatalf("steady %+v\nover %+v", r.Steady, r.Over)
	}
	if l := r.steadyLine(); !strings.Contains(l, "2 keys whose rate grows with the write rate were throttled for more than 1%") || !strings.Contains(l, "the hot recipe") || !strings.Contains(l, "week") {
		t.Errorf("steady line %q", l)
	}
	rep := &Report{AWSLimits: r}
	b.Reset()
	if err := rep.html(&b); err != nil || !strings.Contains(b.String(), template.HTMLEscapeString(r.line())) || !strings.Contains(b.String(), "16.7%") {
		t.Errorf("the HTML page lacks the line or the key (%v)", err)
	}

	put := func(pk string, n int) {
		for range n {
			_, _ = db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("load"),
				Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: pk}}})
		}
	}
	// measured phases in which nothing met a limit are told apart from a
	// run that never reached its drain
	now = now.Add(time.Second)
	before = lim.KeyCounts()
	put("RECIPE#cold", 5)
	r = awsLimitsOf(lim, [2][]ddblocal.KeyCount{before, lim.KeyCounts()}, 1, nil)
	if js, _ := json.Marshal(r); !r.Measured || len(r.Steady) != 0 || !strings.Contains(string(js), `"measured":true`) ||
		!strings.Contains(r.steadyLine(), "0 keys met a limit") {
		t.Errorf("a quiet measured phase: %s; line %q", js, r.steadyLine())
	}
	// a key forgotten while idle and counted anew is not subtracted from
	// its old counts: 12 requests of the new count, 5 of the old
	before = lim.KeyCounts()
	now = now.Add(2 * time.Minute)
	put("OTHER", 1) // the Limiter forgets idle keys as it counts
	put("RECIPE#cold", 12)
	r = awsLimitsOf(lim, [2][]ddblocal.KeyCount{before, lim.KeyCounts()}, 1, nil)
	if len(r.Steady) != 1 || r.Steady[0].Key != "RECIPE#cold" || r.Steady[0].Requests != 12 || r.Steady[0].Throttled != 2 {
		t.Errorf("a key counted anew: %+v, want RECIPE#cold with 12 requests, 2 throttled", r.Steady)
	}

	// requests whose rate the polls set (app/drain: the projector's
	// drains) are listed apart with their rate, the same at full scale,
	// and never count against the 1% of a key that takes the growth
	drains := dynamodb.New(db.Options(), func(o *dynamodb.Options) { o.AppID = projections.DrainApp })
	now = now.Add(time.Second)
	before = lim.KeyCounts()
	for range 12 {
		_, _ = drains.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("load"),
			Item: map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "RECIPE#hot"}}})
	}
	r = awsLimitsOf(lim, [2][]ddblocal.KeyCount{before, lim.KeyCounts()}, 4, map[string]string{"RECIPE#hot": "the hot recipe"})
	if len(r.Cadence) != 1 || len(r.Steady) != 0 || len(r.Over) != 0 {
		t.Fatalf("cadence %+v\nsteady %+v\nover %+v; want the drains' key apart", r.Cadence, r.Steady, r.Over)
	}
	if k := r.Cadence[0]; k.Key != "RECIPE#hot" || k.App != projections.DrainApp || k.PerSecond != 3 || k.Throttled != 2 || k.TakesGrowth {
		t.Errorf("the drains' key %+v, want RECIPE#hot at 3 requests/s, 2 throttled, not taking the growth", k)
	}
	if l := r.steadyLine(); !strings.Contains(l, "no key whose rate grows") || !strings.Contains(l, "1 met a limit under requests set by the polls") {
		t.Errorf("steady line %q", l)
	}
	b.Reset()
	r.print(&b)
	if !strings.Contains(b.String(), "set by the polls") || !strings.Contains(b.String(), "100 times the units") || !strings.Contains(b.String(), "3.0") {
		t.Errorf("printed:\n%s", b.String())
	}
	b.Reset()
	if err := (&Report{AWSLimits: r}).html(&b); err != nil || !strings.Contains(b.String(), "Set by the polls") || !strings.Contains(b.String(), "takes 100 times") {
		t.Errorf("the HTML page lacks the keys set by the polls (%v)", err)
	}
}

package infra_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	dynamodbres "github.com/awslabs/goformation/v7/cloudformation/dynamodb"
	lambdares "github.com/awslabs/goformation/v7/cloudformation/lambda"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/infra"
	"github.com/dynastream/dynastream/internal/notify"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// open parses template.yaml, keeping intrinsic functions readable: Ref X
// becomes "ref:X", GetAtt X.Y "getatt:X.Y" and Sub S "sub:S", so the checks
// can see what refers to what (goformation resolves only parameter
// defaults by itself). A Ref to a Number parameter becomes its default, as
// the numeric properties it feeds can hold nothing else (numberRefs checks
// those refs on the raw template).
func open(t *testing.T) *cloudformation.Template { return openWith(t, nil) }

// openWith is open with String parameters set (others at their defaults):
// the template's conditions (Fn::Equals of a parameter and a value) are
// decided by them, and Fn::If takes the branch they choose; AWS::NoValue
// is nil (a statement it leaves out is skipped by statements).
func openWith(t *testing.T, params map[string]string) *cloudformation.Template {
	t.Helper()
	b, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	value := func(tmpl any, name string) string {
		if v, ok := params[name]; ok {
			return v
		}
		if p := parameter(tmpl, name); p["Default"] != nil {
			return fmt.Sprint(p["Default"])
		}
		return "ref:" + name
	}
	tmpl, err := goformation.ParseYAMLWithOptions(infra.WithoutNewerProperties(b), &intrinsics.ProcessorOptions{
		IntrinsicHandlerOverrides: map[string]intrinsics.IntrinsicHandler{
			"Ref": func(_ string, in, tmpl any) any {
				if in == "AWS::NoValue" {
					return nil
				}
				if p := parameter(tmpl, fmt.Sprint(in)); p["Type"] == "Number" && p["Default"] != nil {
					return p["Default"]
				}
				if _, ok := params[fmt.Sprint(in)]; ok {
					return params[fmt.Sprint(in)]
				}
				return fmt.Sprint("ref:", in)
			},
			"Fn::If": func(_ string, in, tmpl any) any {
				args, _ := in.([]any)
				if len(args) != 3 {
					return nil
				}
				if condition(t, tmpl, fmt.Sprint(args[0]), value) {
					return args[1]
				}
				return args[2]
			},
			"Fn::GetAtt": func(_ string, in, _ any) any {
				if parts, ok := in.([]any); ok {
					s := make([]string, len(parts))
					for i, p := range parts {
						s[i] = fmt.Sprint(p)
					}
					return "getatt:" + strings.Join(s, ".")
				}
				return fmt.Sprint("getatt:", in)
			},
			"Fn::Sub": func(_ string, in, _ any) any {
				if parts, ok := in.([]any); ok && len(parts) > 0 {
					in = parts[0]
				}
				return fmt.Sprint("sub:", in)
			},
		},
	})
	if err != nil {
		t.Fatalf("parse template.yaml: %v", err)
	}
	return tmpl
}

// condition decides a condition of the raw template of the form
// Fn::Equals [Ref P, v] (the only form the template uses).
func condition(t *testing.T, tmpl any, name string, value func(any, string) string) bool {
	m, _ := tmpl.(map[string]any)
	conds, _ := m["Conditions"].(map[string]any)
	c, _ := conds[name].(map[string]any)
	eq, _ := c["Fn::Equals"].([]any)
	if len(eq) != 2 {
		t.Fatalf("condition %s is not Fn::Equals [Ref P, value]: %v", name, conds[name])
	}
	ref, _ := eq[0].(map[string]any)
	return value(tmpl, fmt.Sprint(ref["Ref"])) == fmt.Sprint(eq[1])
}

// parameter returns a parameter's definition from the raw template.
func parameter(tmpl any, name string) map[string]any {
	t, _ := tmpl.(map[string]any)
	ps, _ := t["Parameters"].(map[string]any)
	p, _ := ps[name].(map[string]any)
	return p
}

type keyElem struct{ Name, Type string }

type index struct {
	Name       string
	Keys       []keyElem
	Projection string
}

type tableShape struct {
	Attrs      []keyElem
	Keys       []keyElem
	GSIs       []index
	Billing    string
	StreamView string
	TTL        string
}

func sortShape(s *tableShape) {
	sort.Slice(s.Attrs, func(i, j int) bool { return s.Attrs[i].Name < s.Attrs[j].Name })
	sort.Slice(s.GSIs, func(i, j int) bool { return s.GSIs[i].Name < s.GSIs[j].Name })
}

// TestTableMatchesSchema: the template's table is store.TableInput (plus
// TTL on store.AttrTTL), and its bookkeeping and effects tables
// store.BookkeepingTableInput, field by field; changing either side alone
// fails.
func TestTableMatchesSchema(t *testing.T) {
	tmpl := open(t)
	tables := tmpl.GetAllDynamoDBTableResources()
	if len(tables) != 3 {
		t.Fatalf("want three AWS::DynamoDB::Table (the table, the bookkeeping and the effects table), got %d", len(tables))
	}
	tb, err := tmpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	compareTable(t, store.TableInput("Table"), tb)
	bk, err := tmpl.GetDynamoDBTableWithName("BookkeepingTable")
	if err != nil {
		t.Fatal(err)
	}
	compareTable(t, store.BookkeepingTableInput("BookkeepingTable"), bk)
	if bk.StreamSpecification != nil {
		t.Error("the bookkeeping table has a stream")
	}
	fx, err := tmpl.GetDynamoDBTableWithName("EffectsTable")
	if err != nil {
		t.Fatal(err)
	}
	compareTable(t, store.BookkeepingTableInput("EffectsTable"), fx) // the same shape (app.EnsureBookkeeping)
	if fx.StreamSpecification != nil {
		t.Error("the effects table has a stream")
	}

	// What only the deployed table has (docs/design.md §2).
	if tb.PointInTimeRecoverySpecification == nil || !derefBool(tb.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled) {
		t.Error("point-in-time recovery is not enabled")
	}
	if tb.SSESpecification == nil || !tb.SSESpecification.SSEEnabled {
		t.Error("SSE is not enabled")
	}
	if !derefBool(tb.DeletionProtectionEnabled) {
		t.Error("deletion protection is not enabled")
	}
}

// compareTable checks a template table against its CreateTableInput (plus
// TTL on store.AttrTTL), field by field.
func compareTable(t *testing.T, in *dynamodb.CreateTableInput, tb *dynamodbres.Table) {
	t.Helper()
	want := tableShape{Billing: string(in.BillingMode), TTL: store.AttrTTL}
	for _, a := range in.AttributeDefinitions {
		want.Attrs = append(want.Attrs, keyElem{*a.AttributeName, string(a.AttributeType)})
	}
	for _, k := range in.KeySchema {
		want.Keys = append(want.Keys, keyElem{*k.AttributeName, string(k.KeyType)})
	}
	for _, g := range in.GlobalSecondaryIndexes {
		ix := index{Name: *g.IndexName, Projection: string(g.Projection.ProjectionType)}
		for _, k := range g.KeySchema {
			ix.Keys = append(ix.Keys, keyElem{*k.AttributeName, string(k.KeyType)})
		}
		want.GSIs = append(want.GSIs, ix)
	}
	if s := in.StreamSpecification; s != nil && s.StreamEnabled != nil && *s.StreamEnabled {
		want.StreamView = string(s.StreamViewType)
	}

	got := tableShape{Billing: deref(tb.BillingMode)}
	for _, a := range tb.AttributeDefinitions {
		got.Attrs = append(got.Attrs, keyElem{a.AttributeName, a.AttributeType})
	}
	for _, k := range tb.KeySchema {
		got.Keys = append(got.Keys, keyElem{k.AttributeName, k.KeyType})
	}
	for _, g := range tb.GlobalSecondaryIndexes {
		ix := index{Name: g.IndexName}
		if g.Projection != nil {
			ix.Projection = deref(g.Projection.ProjectionType)
		}
		for _, k := range g.KeySchema {
			ix.Keys = append(ix.Keys, keyElem{k.AttributeName, k.KeyType})
		}
		got.GSIs = append(got.GSIs, ix)
	}
	if tb.StreamSpecification != nil {
		got.StreamView = tb.StreamSpecification.StreamViewType
	}
	if ttl := tb.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
		got.TTL = deref(ttl.AttributeName)
	}

	sortShape(&want)
	sortShape(&got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("template table %s differs from the code (-code +template):\n%s", *in.TableName, diff)
	}
	if tb.ProvisionedThroughput != nil || len(tb.LocalSecondaryIndexes) > 0 {
		t.Error("the table has provisioned throughput or LSIs the code does not know of")
	}
}

var functions = []string{"WriterFunction", "ProjectorFunction", "NotifierFunction"}

func TestFunctions(t *testing.T) {
	tmpl := open(t)
	if n := len(tmpl.GetAllLambdaFunctionResources()); n != len(functions) {
		t.Errorf("want %d functions, got %d", len(functions), n)
	}
	for _, name := range functions {
		fn, err := tmpl.GetLambdaFunctionWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if deref(fn.Runtime) != "provided.al2023" || !slices.Equal(fn.Architectures, []string{"arm64"}) || deref(fn.Handler) != "bootstrap" {
			t.Errorf("%s: runtime %q, architectures %v, handler %q; want provided.al2023, [arm64], bootstrap",
				name, deref(fn.Runtime), fn.Architectures, deref(fn.Handler))
		}
		if fn.Code == nil || deref(fn.Code.S3Bucket) != "ref:CodeBucket" {
			t.Errorf("%s: code is not from the CodeBucket parameter", name)
		}
		env := map[string]string{}
		if fn.Environment != nil {
			env = fn.Environment.Variables
		}
		if env["DYNAMODB_TABLE_NAME"] != "ref:Table" || env["LOG_LEVEL"] == "" {
			t.Errorf("%s: DYNAMODB_TABLE_NAME=%q LOG_LEVEL=%q", name, env["DYNAMODB_TABLE_NAME"], env["LOG_LEVEL"])
		}
		if _, ok := env["AWS_REGION"]; ok {
			t.Errorf("%s: AWS_REGION is reserved (Lambda sets it)", name)
		}
		if _, ok := env["AWS_LAMBDA_RUNTIME_API"]; ok {
			t.Errorf("%s: AWS_LAMBDA_RUNTIME_API is Lambda's own", name)
		}
	}
	// the write shards (store.Sharding): the same settings for the two
	// programs that read and write the sharded keys
	for _, name := range []string{"WriterFunction", "ProjectorFunction"} {
		fn, _ := tmpl.GetLambdaFunctionWithName(name)
		for k, v := range map[string]string{"STORE_SHARDS_RECENT": "sub:${ShardsRecent}", "STORE_SHARDS_TRENDING": "sub:${ShardsTrending}",
			"STORE_SHARDS_METHOD": "sub:${ShardsMethod}", "STORE_SHARDS_BACKFILLED": "ref:ShardsBackfilled"} {
			if got := fn.Environment.Variables[k]; got != v {
				t.Errorf("%s: %s=%q, want %q", name, k, got, v)
			}
		}
	}
	raw := rawTemplate(t)
	for name, def := range map[string]int{"ShardsRecent": store.DefaultSharding.Recent, "ShardsTrending": store.DefaultSharding.Trending,
		"ShardsMethod": store.DefaultSharding.Method} {
		if p := parameter(raw, name); p["Type"] != "Number" || p["Default"] != float64(def) || p["MinValue"] != 1.0 || p["MaxValue"] != float64(store.MaxShards) {
			t.Errorf("parameter %s = %v, want Number, default %d, 1..%d (store.DefaultSharding, store.MaxShards)", name, p, def, store.MaxShards)
		}
	}
	n, _ := tmpl.GetLambdaFunctionWithName("NotifierFunction")
	env := n.Environment.Variables
	for k, v := range map[string]string{
		"EVENT_BUS_NAME":        "ref:EventBus",
		"MAIL_FROM":             "ref:MailFrom",
		"SES_CONFIGURATION_SET": "ref:MailConfigurationSet",
		"APP_BASE_URL":          "ref:AppBaseUrl",
	} {
		if env[k] != v {
			t.Errorf("notifier: %s=%q, want %q", k, env[k], v)
		}
	}
	if len(tmpl.GetAllEventsEventBusResources()) != 1 || len(tmpl.GetAllSESConfigurationSetResources()) != 1 {
		t.Error("want one EventBridge bus and one SES configuration set")
	}
}

// queueArn returns "getatt:Q.Arn" for each SQS queue Q.
func queueArns(tmpl *cloudformation.Template) []string {
	var arns []string
	for name := range tmpl.GetAllSQSQueueResources() {
		arns = append(arns, "getatt:"+name+".Arn")
	}
	return arns
}

func TestEventSourceMappings(t *testing.T) {
	tmpl := open(t)
	esms := tmpl.GetAllLambdaEventSourceMappingResources()
	byFunc := map[string]string{}
	for name, m := range esms {
		byFunc[m.FunctionName] = name
	}
	want := map[string]string{"ref:ProjectorFunction": "", "ref:NotifierFunction": ""}
	if len(esms) != len(want) {
		t.Errorf("want %d event source mappings, got %d", len(want), len(esms))
	}
	queues := queueArns(tmpl)
	for fn := range want {
		name, ok := byFunc[fn]
		if !ok {
			t.Errorf("no event source mapping for %s", fn)
			continue
		}
		m := esms[name]
		if deref(m.EventSourceArn) != "getatt:Table.StreamArn" {
			t.Errorf("%s: source %q, want the table's stream", name, deref(m.EventSourceArn))
		}
		if !slices.Contains(m.FunctionResponseTypes, "ReportBatchItemFailures") {
			t.Errorf("%s: no ReportBatchItemFailures", name)
		}
		if !derefBool(m.BisectBatchOnFunctionError) {
			t.Errorf("%s: does not bisect", name)
		}
		if m.MaximumRetryAttempts == nil || *m.MaximumRetryAttempts < 0 || *m.MaximumRetryAttempts > 10 {
			t.Errorf("%s: want a retry limit of 0..10, got %v", name, m.MaximumRetryAttempts)
		}
		if m.DestinationConfig == nil || m.DestinationConfig.OnFailure == nil ||
			!slices.Contains(queues, deref(m.DestinationConfig.OnFailure.Destination)) {
			t.Errorf("%s: the on-failure destination is not a queue of the template", name)
		}
		if deref(m.StartingPosition) != "TRIM_HORIZON" {
			t.Errorf("%s: starting position %q", name, deref(m.StartingPosition))
		}
	}
}

// The consumers' batching and concurrency are parameters shared by both
// mappings, named as the mapping's properties and with the local runner's
// defaults (stream.Default*), so the two modes are configured alike.
func TestStreamSettingsAreParameters(t *testing.T) {
	raw := rawTemplate(t)
	want := map[string]struct {
		def, min, max float64
	}{
		"BatchSize":                      {stream.DefaultBatchSize, 1, 10000},
		"MaximumBatchingWindowInSeconds": {stream.DefaultBatchWindow, 0, 300},
		// the programs' 2, not the library's 1: cmd/internal/app's
		// DefaultParallelizationFactor, whose test reads this template
		"ParallelizationFactor": {2, 1, 10},
		"MaximumRetryAttempts":  {stream.DefaultMaxRetries, -1, 10000},
		// the library's 0 (MaxRecordAge unset) is Lambda's -1
		"MaximumRecordAgeInSeconds": {-1, -1, 604800},
	}
	for name, w := range want {
		p := parameter(raw, name)
		if p["Type"] != "Number" || p["Default"] != w.def || p["MinValue"] != w.min || p["MaxValue"] != w.max {
			t.Errorf("parameter %s = %v, want Number, default %v, %v..%v", name, p, w.def, w.min, w.max)
		}
	}
	resources, _ := raw.(map[string]any)["Resources"].(map[string]any)
	n := 0
	for rname, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		n++
		props, _ := res["Properties"].(map[string]any)
		for name := range want {
			if ref, _ := props[name].(map[string]any); ref["Ref"] != name {
				t.Errorf("%s: %s is %v, want !Ref %s", rname, name, props[name], name)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d event source mappings, want 2", n)
	}
}

// TestNewerProperties: each event source mapping turns on the metrics
// (EventCount) its alarms and the runner's consumer.Mapping name.
func TestNewerProperties(t *testing.T) {
	resources, _ := rawTemplate(t).(map[string]any)["Resources"].(map[string]any)
	for name, r := range resources {
		res, _ := r.(map[string]any)
		if res["Type"] != "AWS::Lambda::EventSourceMapping" {
			continue
		}
		props, _ := res["Properties"].(map[string]any)
		mc, _ := props["MetricsConfig"].(map[string]any)
		if m, _ := mc["Metrics"].([]any); len(m) != 1 || m[0] != "EventCount" {
			t.Errorf("%s: MetricsConfig %v, want Metrics [EventCount]", name, props["MetricsConfig"])
		}
	}
}

// rawTemplate is template.yaml as plain values, intrinsics untouched (in
// their long form: !Ref X is {"Ref": "X"}).
func rawTemplate(t *testing.T) any {
	t.Helper()
	b, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := intrinsics.ProcessYAML(b, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestProjectorFilter: the projector's mapping filters with
// stream.LoopGuard, the value the local runner and the function apply
// (pattern for pattern), and that filter keeps core items and drops the
// projector's own derived items, evaluated by package filter as Lambda
// evaluates patterns.
func TestProjectorFilter(t *testing.T) {
	tmpl := open(t)
	m, err := tmpl.GetLambdaEventSourceMappingWithName("ProjectorEventSourceMapping")
	if err != nil {
		t.Fatal(err)
	}
	c := criteria(t, m)
	if d := cmp.Diff(projections.Filter().Patterns(), c.Patterns()); d != "" {
		t.Errorf("the template's filter is not projections.Filter() (-go +template):\n%s", d)
	}
	core := `{"PK":{"S":"ROOM#1"},"SK":{"S":"ROOM"}}`
	coreFalse := `{"PK":{"S":"ROOM#1"},"SK":{"S":"X"},"derived":{"BOOL":false}}`
	derived := `{"PK":{"S":"ROOM#1"},"SK":{"S":"ACTIVITY#1"},"derived":{"BOOL":true}}`
	for _, tc := range []struct {
		name     string
		old, new string
		keep     bool
	}{
		{"core insert", "", core, true},
		{"core modify", core, core, true},
		{"core remove", core, "", true},
		{"derived false insert", "", coreFalse, true},
		{"derived false remove", coreFalse, "", true},
		{"derived insert", "", derived, false},
		{"derived modify", derived, derived, false},
		{"derived remove (TTL)", derived, "", false},
	} {
		if keep := c.Match(record(t, tc.old, tc.new)); keep != tc.keep {
			t.Errorf("%s: kept=%v, want %v", tc.name, keep, tc.keep)
		}
	}
	// A recipe's pending item is derived, and kept: the projector drains it.
	// Lambda filters on a record's Keys as on its images ("Filtering with
	// table keys", lambda/latest/dg/with-ddb-filtering.html), with the
	// prefix rule of invocation-eventfiltering.html#filtering-syntax.
	pending := record(t, "", `{"PK":{"S":"PENDING#r1#3"},"SK":{"S":"PENDING"},"derived":{"BOOL":true}}`)
	pending.Change.Keys["PK"] = events.NewStringAttribute("PENDING#r1#3")
	pending.Change.Keys["SK"] = events.NewStringAttribute("PENDING")
	if !c.Match(pending) || projections.Skip(pending) {
		t.Error("a pending item's record is dropped")
	}
	// the ledger beside it is not (its record asks for nothing)
	ledger := record(t, "", `{"PK":{"S":"PENDING#r1#3"},"SK":{"S":"COOKS#e1"},"derived":{"BOOL":true}}`)
	ledger.Change.Keys["PK"] = events.NewStringAttribute("PENDING#r1#3")
	ledger.Change.Keys["SK"] = events.NewStringAttribute("COOKS#e1")
	if c.Match(ledger) || !projections.Skip(ledger) {
		t.Error("a pending partition's ledger record is kept")
	}
	if rec := record(t, "", derived); projections.Skip(rec) != !c.Match(rec) {
		t.Error("projections.Skip and the filter disagree on a derived record")
	}
}

// criteria returns a mapping's FilterCriteria, parsed as Lambda would
// (package filter: its syntax and limits); it fails the test when there
// are none, or a pattern filters on anything but the dynamodb key (all a
// DynamoDB mapping filters on, Lambda's documentation says).
func criteria(t *testing.T, m *lambdares.EventSourceMapping) filter.Criteria {
	t.Helper()
	if m.FilterCriteria == nil || len(m.FilterCriteria.Filters) == 0 {
		t.Fatal("no filter criteria")
	}
	var patterns []string
	for _, f := range m.FilterCriteria.Filters {
		var p map[string]any
		if err := json.Unmarshal([]byte(deref(f.Pattern)), &p); err != nil {
			t.Fatalf("pattern %q: %v", deref(f.Pattern), err)
		}
		for k := range p {
			if k != "dynamodb" {
				t.Errorf("pattern filters on %q: DynamoDB mappings filter on the dynamodb key only", k)
			}
		}
		patterns = append(patterns, deref(f.Pattern))
	}
	c, err := filter.ParseCriteria(patterns...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// record is a MODIFY record with these images (JSON; "" for none).
func record(t *testing.T, old, new string) events.DynamoDBEventRecord {
	image := func(s string) map[string]events.DynamoDBAttributeValue {
		if s == "" {
			return nil
		}
		var m map[string]events.DynamoDBAttributeValue
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		Keys:     map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ROOM#1")},
		OldImage: image(old), NewImage: image(new),
	}}
}

// TestNotifierFilter: the notifier's mapping filters with notify.Filter,
// the value the local runner and the function apply; it keeps exactly the
// item types notify.ItemTypes names (inserts, modifies and removals,
// derived or not) and drops every other (its own notifications above
// all).
func TestNotifierFilter(t *testing.T) {
	tmpl := open(t)
	m, err := tmpl.GetLambdaEventSourceMappingWithName("NotifierEventSourceMapping")
	if err != nil {
		t.Fatal(err)
	}
	c := criteria(t, m)
	if d := cmp.Diff(notify.Filter().Patterns(), c.Patterns()); d != "" {
		t.Errorf("the template's filter is not notify.Filter() (-go +template):\n%s", d)
	}
	want := notify.ItemTypes()
	item := func(it string, derived bool) string {
		return fmt.Sprintf(`{"PK":{"S":"X#1"},"SK":{"S":"Y"},"itemType":{"S":%q},"derived":{"BOOL":%v}}`, it, derived)
	}
	for _, it := range append(want, "Notification", "Activity", "Connection", "ReactionCounts", "UserRoom", "Trending", "") {
		kept := slices.Contains(want, it)
		for _, tc := range []struct{ kind, old, new string }{
			{"insert", "", item(it, false)},
			{"derived insert", "", item(it, true)},
			{"modify", item(it, false), item(it, false)},
			{"remove", item(it, false), ""},
		} {
			if got := c.Match(record(t, tc.old, tc.new)); got != kept {
				t.Errorf("%s %q: kept=%v, want %v", tc.kind, it, got, kept)
			}
		}
	}
}

func TestHTTPAPI(t *testing.T) {
	tmpl := open(t)
	in, err := tmpl.GetApiGatewayV2IntegrationWithName("WriterIntegration")
	if err != nil {
		t.Fatal(err)
	}
	if in.IntegrationType != "AWS_PROXY" || deref(in.IntegrationUri) != "getatt:WriterFunction.Arn" || deref(in.PayloadFormatVersion) != "2.0" {
		t.Errorf("writer integration: %s %s payload %q; want AWS_PROXY to the writer, payload 2.0",
			in.IntegrationType, deref(in.IntegrationUri), deref(in.PayloadFormatVersion))
	}
	api, err := tmpl.GetApiGatewayV2ApiWithName("HttpApi")
	if err != nil || deref(api.ProtocolType) != "HTTP" {
		t.Errorf("want an HTTP API named HttpApi: %v", err)
	}
	auths := tmpl.GetAllApiGatewayV2AuthorizerResources()
	if a, ok := auths["JwtAuthorizer"]; !ok || a.AuthorizerType != "JWT" || a.JwtConfiguration == nil {
		t.Error("no JWT authorizer JwtAuthorizer")
	}
	routes := map[string]string{}
	for _, r := range tmpl.GetAllApiGatewayV2RouteResources() {
		if r.ApiId != "ref:HttpApi" {
			continue
		}
		if deref(r.Target) != "sub:integrations/${WriterIntegration}" {
			t.Errorf("route %s: target %q", r.RouteKey, deref(r.Target))
		}
		auth := deref(r.AuthorizationType)
		if auth == "JWT" && deref(r.AuthorizerId) != "ref:JwtAuthorizer" {
			auth = "JWT with another authorizer"
		}
		routes[r.RouteKey] = auth
	}
	want := map[string]string{"$default": "JWT", "GET /healthz": "NONE", "GET /openapi.yaml": "NONE", "GET /openapi.json": "NONE"}
	if diff := cmp.Diff(want, routes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// The chat's WebSocket API: its routes, all to the writer, the frame
// routes two-way (a route response, so the writer's answer reaches the
// sender), a stage, the permission to invoke the writer, and the notifier
// pointed at the stage's management endpoint.
func TestWebSocketAPI(t *testing.T) {
	tmpl := open(t)
	api, err := tmpl.GetApiGatewayV2ApiWithName("WebSocketApi")
	if err != nil || deref(api.ProtocolType) != "WEBSOCKET" || deref(api.RouteSelectionExpression) != "$request.body.action" {
		t.Fatalf("want a WebSocket API WebSocketApi routing on $request.body.action: %v", err)
	}
	in, err := tmpl.GetApiGatewayV2IntegrationWithName("WebSocketIntegration")
	if err != nil || in.IntegrationType != "AWS_PROXY" || !strings.Contains(deref(in.IntegrationUri), "${WriterFunction.Arn}/invocations") {
		t.Fatalf("WebSocket integration: %+v %v", in, err)
	}
	routeIDs := map[string]string{}
	routes := map[string]bool{}
	for name, r := range tmpl.GetAllApiGatewayV2RouteResources() {
		if r.ApiId != "ref:WebSocketApi" {
			continue
		}
		if deref(r.Target) != "sub:integrations/${WebSocketIntegration}" || deref(r.AuthorizationType) != "NONE" {
			t.Errorf("route %s: target %q, authorization %q", r.RouteKey, deref(r.Target), deref(r.AuthorizationType))
		}
		routeIDs["ref:"+name] = r.RouteKey
		routes[r.RouteKey] = deref(r.RouteResponseSelectionExpression) == "$default"
	}
	want := map[string]bool{"$connect": false, "$disconnect": false, "sendMessage": true, "joinRoom": true, "$default": true}
	if diff := cmp.Diff(want, routes); diff != "" {
		t.Errorf("WebSocket routes → two-way (-want +got):\n%s", diff)
	}
	answered := map[string]bool{}
	for _, rr := range tmpl.GetAllApiGatewayV2RouteResponseResources() {
		if rr.ApiId == "ref:WebSocketApi" && rr.RouteResponseKey == "$default" {
			answered[routeIDs[rr.RouteId]] = true
		}
	}
	for key, twoWay := range want {
		if twoWay && !answered[key] {
			t.Errorf("route %s has no $default route response: its answer would never reach the client", key)
		}
	}
	stages := 0
	for _, st := range tmpl.GetAllApiGatewayV2StageResources() {
		if st.ApiId == "ref:WebSocketApi" {
			stages++
			if st.StageName != "ref:Stage" || !derefBool(st.AutoDeploy) {
				t.Errorf("WebSocket stage %q, auto-deploy %v", st.StageName, derefBool(st.AutoDeploy))
			}
		}
	}
	if stages != 1 {
		t.Errorf("%d WebSocket stages, want 1", stages)
	}
	invoke := false
	for _, p := range tmpl.GetAllLambdaPermissionResources() {
		invoke = invoke || (p.FunctionName == "ref:WriterFunction" && p.Principal == "apigateway.amazonaws.com" && strings.Contains(deref(p.SourceArn), "${WebSocketApi}/*"))
	}
	if !invoke {
		t.Error("API Gateway may not invoke the writer for the WebSocket API")
	}
	w, _ := tmpl.GetLambdaFunctionWithName("WriterFunction")
	if env := w.Environment.Variables; env["JWT_ISSUER"] != "ref:JwtIssuer" || env["JWT_AUDIENCE"] != "ref:JwtAudience" {
		t.Errorf("writer: JWT_ISSUER=%q JWT_AUDIENCE=%q ($connect verifies tokens with them)", env["JWT_ISSUER"], env["JWT_AUDIENCE"])
	}
	if e := w.Environment.Variables["CHAT_MANAGEMENT_ENDPOINT"]; !strings.Contains(e, "https://${WebSocketApi}.execute-api.") || !strings.HasSuffix(e, "/${WebSocketStage}") {
		t.Errorf("writer: CHAT_MANAGEMENT_ENDPOINT=%q, want the WebSocket stage's URL", e)
	}
	n, _ := tmpl.GetLambdaFunctionWithName("NotifierFunction")
	if e := n.Environment.Variables["CHAT_PUSH_ENDPOINT"]; !strings.Contains(e, "https://${WebSocketApi}.execute-api.") || !strings.HasSuffix(e, "/${WebSocketStage}") {
		t.Errorf("notifier: CHAT_PUSH_ENDPOINT=%q, want the WebSocket stage's URL", e)
	}
	if _, ok := tmpl.Outputs["ChatUrl"]; !ok {
		t.Error("no output ChatUrl")
	}
}

type statement struct{ Actions, Resources []string }

// statements flattens a role's inline policies.
func statements(t *testing.T, tmpl *cloudformation.Template, role string) []statement {
	t.Helper()
	r, err := tmpl.GetIAMRoleWithName(role)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ManagedPolicyArns) > 0 {
		t.Errorf("%s: managed policies are not checked; use inline ones", role)
	}
	var out []statement
	for _, p := range r.Policies {
		doc, _ := p.PolicyDocument.(map[string]any)
		sts, ok := doc["Statement"].([]any)
		if !ok {
			sts = []any{doc["Statement"]}
		}
		for _, s := range sts {
			m, _ := s.(map[string]any)
			if len(m) == 0 { // AWS::NoValue: a statement a condition leaves out
				continue
			}
			if m["Effect"] != "Allow" || m["NotAction"] != nil || m["NotResource"] != nil {
				t.Errorf("%s/%s: only plain Allow statements are checked: %v", role, p.PolicyName, m)
			}
			out = append(out, statement{strs(m["Action"]), strs(m["Resource"])})
		}
	}
	return out
}

func strs(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var s []string
		for _, e := range v {
			s = append(s, fmt.Sprint(e))
		}
		return s
	}
	return nil
}

func TestIAM(t *testing.T) {
	tmpl := open(t)
	roles := map[string]string{}
	for _, name := range functions {
		fn, _ := tmpl.GetLambdaFunctionWithName(name)
		roles[name] = strings.TrimSuffix(strings.TrimPrefix(fn.Role, "getatt:"), ".Arn")
	}
	if len(tmpl.GetAllIAMRoleResources()) != len(functions) || roles["WriterFunction"] == roles["ProjectorFunction"] ||
		roles["WriterFunction"] == roles["NotifierFunction"] || roles["ProjectorFunction"] == roles["NotifierFunction"] {
		t.Errorf("want one role per function, got %v", roles)
	}
	granted := map[string]map[string][]string{} // function → action → resources
	for fn, role := range roles {
		granted[fn] = map[string][]string{}
		for _, s := range statements(t, tmpl, role) {
			for _, a := range s.Actions {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %q", role, a)
				}
				for _, r := range s.Resources {
					if r == "*" {
						t.Errorf("%s: %s on every resource", role, a)
					}
				}
				granted[fn][a] = append(granted[fn][a], s.Resources...)
			}
		}
	}
	has := func(fn, action, resource string) {
		t.Helper()
		if !slices.Contains(granted[fn][action], resource) {
			t.Errorf("%s may not %s on %s (has %v)", fn, action, resource, granted[fn][action])
		}
	}
	for _, a := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
		"dynamodb:Query", "dynamodb:ConditionCheckItem", "dynamodb:BatchGetItem"} {
		has("WriterFunction", a, "getatt:Table.Arn")
	}
	has("WriterFunction", "dynamodb:Query", "sub:${Table.Arn}/index/*")
	has("WriterFunction", "dynamodb:UpdateItem", "getatt:BookkeepingTable.Arn") // invite rate windows, Idempotency-Key records
	has("WriterFunction", "dynamodb:DeleteItem", "getatt:BookkeepingTable.Arn") // an Idempotency-Key released after a 5xx
	has("WriterFunction", "dynamodb:PutItem", "getatt:BookkeepingTable.Arn")    // a chat message's client message id
	has("WriterFunction", "dynamodb:GetItem", "getatt:BookkeepingTable.Arn")    // a user's open chat connections
	for _, fn := range []string{"ProjectorFunction", "NotifierFunction"} {
		for _, a := range []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"} {
			has(fn, a, "getatt:Table.StreamArn")
		}
		for _, a := range []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"} {
			has(fn, a, "getatt:Table.Arn")
		}
		has(fn, "sqs:SendMessage", "getatt:DeadLetterQueue.Arn")
		has(fn, "dynamodb:PutItem", "getatt:BookkeepingTable.Arn") // dead letters
	}
	// Notifications are written with BatchWriteItem; e-mail claims live in
	// the bookkeeping table.
	has("NotifierFunction", "dynamodb:BatchWriteItem", "getatt:Table.Arn")
	for _, a := range []string{"dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"} {
		has("NotifierFunction", a, "getatt:BookkeepingTable.Arn")
	}
	// Chat: pushes and closes on the WebSocket API's stage only; gone and
	// closed connections deleted.
	for _, verb := range []string{"POST", "DELETE"} {
		has("NotifierFunction", "execute-api:ManageConnections", "sub:arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/${Stage}/"+verb+"/@connections/*")
	}
	has("NotifierFunction", "dynamodb:DeleteItem", "getatt:Table.Arn")
	// the writer only looks connections up (GET), to drop those API Gateway
	// refused; the projector does nothing with them
	getConn := "sub:arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/${Stage}/GET/@connections/*"
	if got := granted["WriterFunction"]["execute-api:ManageConnections"]; !slices.Equal(got, []string{getConn}) {
		t.Errorf("writer: execute-api:ManageConnections on %v, want GET on the stage's connections only", got)
	}
	if _, ok := granted["ProjectorFunction"]["execute-api:ManageConnections"]; ok {
		t.Error("the projector may manage chat connections")
	}
	if got := granted["NotifierFunction"]["events:PutEvents"]; !slices.Equal(got, []string{"getatt:EventBus.Arn"}) {
		t.Errorf("notifier: events:PutEvents on %v, want only the bus", got)
	}
	if len(granted["NotifierFunction"]["ses:SendEmail"]) == 0 {
		t.Error("notifier may not send e-mail")
	}
	for _, res := range granted["NotifierFunction"]["ses:SendEmail"] {
		if !strings.Contains(res, ":identity/${SesIdentity}") && !strings.Contains(res, ":configuration-set/${MailConfigurationSet}") {
			t.Errorf("notifier: ses:SendEmail on %q, want the identity and the configuration set only", res)
		}
	}
	// Side effects belong to the notifier, stream reads to the consumers.
	for _, fn := range []string{"WriterFunction", "ProjectorFunction"} {
		for a := range granted[fn] {
			if strings.HasPrefix(a, "events:") || strings.HasPrefix(a, "ses:") {
				t.Errorf("%s has %s", fn, a)
			}
		}
	}
	for a := range granted["WriterFunction"] {
		if a == "dynamodb:GetRecords" || a == "dynamodb:Scan" || strings.HasPrefix(a, "sqs:") {
			t.Errorf("writer has %s", a)
		}
	}
}

// TestAlarms: iterator age (Lambda's), errors and throttles of every
// function, the queue's dead letters, the consumers' own dead letters and
// records failing for five minutes (their EMF metrics, whose names and
// dimensions cmd/lambdatest checks against what the bootstraps emit), and
// the HTTP API's 5xx.
func TestAlarms(t *testing.T) {
	tmpl := open(t)
	alarms := tmpl.GetAllCloudWatchAlarmResources()
	type want struct {
		namespace, metric, statistic string
		dims                         map[string]string
		threshold                    float64
		minutes                      int // consecutive breaching minutes
	}
	has := func(w want) bool {
		for _, a := range alarms {
			if deref(a.Namespace) != w.namespace || deref(a.MetricName) != w.metric || a.Threshold == nil ||
				*a.Threshold != w.threshold || a.ComparisonOperator != "GreaterThanThreshold" || deref(a.Statistic) != w.statistic ||
				deref(a.TreatMissingData) != "notBreaching" || a.Period == nil || *a.Period != 60 ||
				a.EvaluationPeriods != w.minutes || (a.DatapointsToAlarm != nil && *a.DatapointsToAlarm != w.minutes) {
				continue
			}
			dims := map[string]string{}
			for _, d := range a.Dimensions {
				dims[d.Name] = d.Value
			}
			if cmp.Equal(dims, w.dims) {
				return true
			}
		}
		return false
	}
	var wants []want
	for esm, m := range tmpl.GetAllLambdaEventSourceMappingResources() {
		fn := map[string]string{"FunctionName": m.FunctionName}
		wants = append(wants, want{"AWS/Lambda", "IteratorAge", "Maximum", fn, 60000, 5},
			want{"AWS/Lambda", "DroppedEventCount", "Sum", map[string]string{"EventSourceMappingUUID": "ref:" + esm}, 0, 1})
		service := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(m.FunctionName, "ref:"), "Function"))
		ours := map[string]string{"service": service, "consumer": service}
		wants = append(wants,
			want{"dynastream", "DeadLettered", "Sum", ours, 0, 1},
			want{"dynastream", "FailedRecords", "Sum", ours, 0, 5})
	}
	for name := range tmpl.GetAllLambdaFunctionResources() {
		fn := map[string]string{"FunctionName": "ref:" + name}
		wants = append(wants,
			want{"AWS/Lambda", "Errors", "Sum", fn, 0, 1},
			want{"AWS/Lambda", "Throttles", "Sum", fn, 0, 1})
	}
	for name := range tmpl.GetAllSQSQueueResources() {
		wants = append(wants, want{"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", map[string]string{"QueueName": "getatt:" + name + ".QueueName"}, 0, 1})
	}
	wants = append(wants, want{"AWS/ApiGateway", "5xx", "Sum", map[string]string{"ApiId": "ref:HttpApi"}, 0, 1})
	for _, w := range wants {
		if !has(w) {
			t.Errorf("no alarm %s %s %s %v > %v for %d minutes", w.namespace, w.metric, w.statistic, w.dims, w.threshold, w.minutes)
		}
	}
	if len(alarms) != len(wants) {
		t.Errorf("%d alarms, want the %d checked here", len(alarms), len(wants))
	}
}

func TestOutputs(t *testing.T) {
	tmpl := open(t)
	for _, o := range []string{"ApiUrl", "TableName", "EventBusName", "DeadLetterQueueUrl"} {
		if _, ok := tmpl.Outputs[o]; !ok {
			t.Errorf("no output %s", o)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func derefBool(b *bool) bool { return b != nil && *b }

// With StreamSource kinesis the table also writes its changes to a Kinesis
// data stream in microseconds (KinesisStreamSpecification,
// ApproximateCreationDateTimePrecision MICROSECOND), both mappings read
// that stream, their roles may read it, and their filters are the same
// patterns under "data": on a Kinesis source Lambda filters the record's
// data, which here is the DynamoDB change (Lambda Developer Guide, "Lambda
// event filtering", on filtering Kinesis messages: a pattern on a JSON
// payload names its fields under data; paraphrased). With the default
// (dynamodb) there is none of it.
func TestKinesisSource(t *testing.T) {
	raw := rawTemplate(t)
	if p := parameter(raw, "StreamSource"); p["Default"] != "dynamodb" || fmt.Sprint(p["AllowedValues"]) != "[dynamodb kinesis]" {
		t.Errorf("parameter StreamSource %v, want dynamodb or kinesis, dynamodb by default", p)
	}
	if table, err := open(t).GetDynamoDBTableWithName("Table"); err != nil || table.KinesisStreamSpecification != nil {
		t.Errorf("the default writes to Kinesis: %+v (%v)", table.KinesisStreamSpecification, err)
	}
	tmpl := openWith(t, map[string]string{"StreamSource": "kinesis"})
	table, err := tmpl.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	if k := table.KinesisStreamSpecification; k == nil || k.StreamArn != "getatt:ChangeStream.Arn" {
		t.Errorf("the table's KinesisStreamSpecification %+v, want ChangeStream", table.KinesisStreamSpecification)
	}
	spec, _ := raw.(map[string]any)["Resources"].(map[string]any)["Table"].(map[string]any)["Properties"].(map[string]any)["KinesisStreamSpecification"]
	if !strings.Contains(fmt.Sprint(spec), "ApproximateCreationDateTimePrecision:MICROSECOND") {
		t.Errorf("KinesisStreamSpecification %v: want microseconds, what orders one item's changes", spec)
	}
	for name, want := range map[string][]string{"ProjectorEventSourceMapping": projections.Filter().Patterns(), "NotifierEventSourceMapping": notify.Filter().Patterns()} {
		m, err := tmpl.GetLambdaEventSourceMappingWithName(name)
		if err != nil {
			t.Fatal(err)
		}
		if deref(m.EventSourceArn) != "getatt:ChangeStream.Arn" {
			t.Errorf("%s reads %q, want the Kinesis stream", name, deref(m.EventSourceArn))
		}
		var patterns []string
		for _, f := range m.FilterCriteria.Filters {
			patterns = append(patterns, deref(f.Pattern))
		}
		c, err := kinesis.Criteria(patterns...) // each names data only, and parses as the change's
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d := cmp.Diff(want, c.Patterns()); d != "" {
			t.Errorf("%s: the patterns under data are not the consumer's filter (-go +template):\n%s", name, d)
		}
	}
	for _, fn := range []string{"ProjectorFunction", "NotifierFunction"} {
		f, _ := tmpl.GetLambdaFunctionWithName(fn)
		granted := map[string]bool{}
		for _, s := range statements(t, tmpl, strings.TrimSuffix(strings.TrimPrefix(f.Role, "getatt:"), ".Arn")) {
			if slices.Contains(s.Resources, "getatt:ChangeStream.Arn") {
				for _, a := range s.Actions {
					granted[a] = true
				}
			}
		}
		for _, a := range []string{"kinesis:GetRecords", "kinesis:GetShardIterator", "kinesis:DescribeStream", "kinesis:DescribeStreamSummary", "kinesis:ListShards"} {
			if !granted[a] {
				t.Errorf("%s's role may not %s on the Kinesis stream", fn, a)
			}
		}
	}
}

package infra_test

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cfn "github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/ddblocal/moto"
	"github.com/dynastream/dynastream/internal/projections"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
)

// The deploy rehearsal: both templates deployed, as `make deploy` and
// examples/orders' `make deploy` deploy them, to moto_server (pip's moto
// 5.2, a local CloudFormation with DynamoDB, Lambda, IAM, SQS, S3 and
// CloudWatch Logs), and what it created read back and checked against
// this code's own settings. moto creates no API Gateway v2, no alarms and
// no SES configuration set (it accepts them and creates nothing), and
// ignores a table's TimeToLiveSpecification and a function's
// Architectures: those are checked on the template alone (the other tests
// of this package, and cfn-lint). `make test-long` runs it when
// moto_server is on PATH and says so when it is not.

// rehearsal is a moto_server for the rehearsal, stopped at the test's end.
type rehearsal struct {
	url string
	cfg aws.Config
}

func startMoto(t *testing.T) *rehearsal {
	t.Helper()
	if err := moto.Installed(); err != nil {
		t.Skip(err.Error() + ": the deploy rehearsal did not run")
	}
	s := moto.ForTest(t)
	return &rehearsal{url: s.Endpoint, cfg: s.Config()}
}

// put stores an object (moto takes unsigned S3 requests).
func (m *rehearsal) put(t *testing.T, path string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, m.url+path, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: %s", path, resp.Status)
	}
}

// deploy creates a stack from a template file and waits for it; it returns
// the physical ids of its resources by logical id.
func (m *rehearsal) deploy(t *testing.T, name, template string, params map[string]string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	// moto fails a stack (a 500) whose Outputs read an attribute of a
	// resource it does not model (the HTTP API's ApiEndpoint): the
	// Outputs, the templates' last section, stay out of the rehearsal.
	body, _, _ := strings.Cut(string(raw), "\nOutputs:")
	ctx := context.Background()
	c := cfn.NewFromConfig(m.cfg)
	in := &cfn.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body), Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam}}
	for k, v := range params {
		in.Parameters = append(in.Parameters, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := c.CreateStack(ctx, in); err != nil {
		t.Fatalf("create stack %s: %v", name, err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		out, err := c.DescribeStacks(ctx, &cfn.DescribeStacksInput{StackName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Stacks[0].StackStatus
		if st == cfntypes.StackStatusCreateComplete {
			break
		}
		if !strings.HasSuffix(string(st), "_IN_PROGRESS") || time.Now().After(deadline) {
			t.Fatalf("stack %s: %s (%s)", name, st, aws.ToString(out.Stacks[0].StackStatusReason))
		}
	}
	res, err := c.ListStackResources(ctx, &cfn.ListStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	var skipped []string
	for _, r := range res.StackResourceSummaries {
		if aws.ToString(r.ResourceType) == "" { // accepted, not modelled
			skipped = append(skipped, aws.ToString(r.LogicalResourceId))
			continue
		}
		if r.ResourceStatus != cfntypes.ResourceStatusCreateComplete {
			t.Errorf("%s %s: %s", name, aws.ToString(r.LogicalResourceId), r.ResourceStatus)
		}
		ids[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	t.Logf("%s: %d resources created; %d accepted but not modelled by moto", name, len(ids), len(skipped))
	return ids
}

// zipOf is a zip holding one file, bootstrap.
func zipOf(t *testing.T, bootstrap []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, err := w.CreateHeader(&zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, ExternalAttrs: 0o755 << 16})
	if err == nil {
		_, err = f.Write(bootstrap)
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// keys is a table's key schema, attributes and indexes in a comparable
// form.
type keys struct {
	Key   []string
	Attrs []string
	GSIs  []string
}

func keysOf(ks []ddbtypes.KeySchemaElement, ads []ddbtypes.AttributeDefinition) keys {
	var k keys
	for _, e := range ks {
		k.Key = append(k.Key, aws.ToString(e.AttributeName)+" "+string(e.KeyType))
	}
	for _, a := range ads {
		k.Attrs = append(k.Attrs, aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	slices.Sort(k.Attrs)
	return k
}

func gsi(name *string, ks []ddbtypes.KeySchemaElement, p *ddbtypes.Projection) string {
	var parts []string
	for _, e := range ks {
		parts = append(parts, aws.ToString(e.AttributeName)+" "+string(e.KeyType))
	}
	return aws.ToString(name) + ": " + strings.Join(parts, ", ") + " / " + string(p.ProjectionType)
}

// checkTable compares a created table with the CreateTableInput the code
// creates it with.
func checkTable(t *testing.T, db *dynamodb.Client, name string, want *dynamodb.CreateTableInput) {
	t.Helper()
	out, err := db.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	got, exp := keysOf(out.Table.KeySchema, out.Table.AttributeDefinitions), keysOf(want.KeySchema, want.AttributeDefinitions)
	for _, g := range out.Table.GlobalSecondaryIndexes {
		got.GSIs = append(got.GSIs, gsi(g.IndexName, g.KeySchema, g.Projection))
	}
	for _, g := range want.GlobalSecondaryIndexes {
		exp.GSIs = append(exp.GSIs, gsi(g.IndexName, g.KeySchema, g.Projection))
	}
	slices.Sort(got.GSIs)
	slices.Sort(exp.GSIs)
	if d := cmp.Diff(exp, got); d != "" {
		t.Errorf("table %s differs from the code's (-code +deployed):\n%s", name, d)
	}
	wantStream := want.StreamSpecification != nil && aws.ToBool(want.StreamSpecification.StreamEnabled)
	gotStream := out.Table.StreamSpecification != nil && aws.ToBool(out.Table.StreamSpecification.StreamEnabled)
	if gotStream != wantStream || (wantStream && out.Table.StreamSpecification.StreamViewType != want.StreamSpecification.StreamViewType) {
		t.Errorf("table %s: stream %+v, the code's %+v", name, out.Table.StreamSpecification, want.StreamSpecification)
	}
	if out.Table.BillingModeSummary == nil || out.Table.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest {
		t.Errorf("table %s: billing %+v, want on demand", name, out.Table.BillingModeSummary)
	}
}

// checkMapping checks a function's one event source mapping against the
// stream runner's semantics: partial batch responses, bisection, the
// default retries, the on-failure queue and the loop guard's filter.
func checkMapping(t *testing.T, l *lambda.Client, function, streamOf, queue string, filters int) {
	t.Helper()
	out, err := l.ListEventSourceMappings(context.Background(), &lambda.ListEventSourceMappingsInput{FunctionName: aws.String(function)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.EventSourceMappings) != 1 {
		t.Fatalf("%s: %d event source mappings, want 1", function, len(out.EventSourceMappings))
	}
	m := out.EventSourceMappings[0]
	if strings.HasPrefix(streamOf, "arn:aws:kinesis:") { // a Kinesis stream's ARN
		if aws.ToString(m.EventSourceArn) != streamOf {
			t.Errorf("%s: source %s, want the Kinesis stream %s", function, aws.ToString(m.EventSourceArn), streamOf)
		}
	} else if !strings.Contains(aws.ToString(m.EventSourceArn), "/"+streamOf+"/stream/") {
		t.Errorf("%s: source %s, want the stream of %s", function, aws.ToString(m.EventSourceArn), streamOf)
	}
	if !slices.Contains(m.FunctionResponseTypes, lambdatypes.FunctionResponseTypeReportBatchItemFailures) {
		t.Errorf("%s: no ReportBatchItemFailures", function)
	}
	if !aws.ToBool(m.BisectBatchOnFunctionError) {
		t.Errorf("%s: does not bisect", function)
	}
	if got := aws.ToInt32(m.MaximumRetryAttempts); got != stream.DefaultMaxRetries {
		t.Errorf("%s: %d retries, the runner's default is %d", function, got, stream.DefaultMaxRetries)
	}
	if got := aws.ToInt32(m.BatchSize); got != stream.DefaultBatchSize {
		t.Errorf("%s: batches of %d, the runner's default is %d", function, got, stream.DefaultBatchSize)
	}
	if m.StartingPosition != lambdatypes.EventSourcePositionTrimHorizon {
		t.Errorf("%s: starting position %s", function, m.StartingPosition)
	}
	if m.DestinationConfig == nil || m.DestinationConfig.OnFailure == nil || !strings.HasSuffix(aws.ToString(m.DestinationConfig.OnFailure.Destination), ":"+queue) {
		t.Errorf("%s: on-failure destination %+v, want the queue %s", function, m.DestinationConfig, queue)
	}
	if m.FilterCriteria == nil || len(m.FilterCriteria.Filters) != filters {
		t.Errorf("%s: filters %+v, want %d", function, m.FilterCriteria, filters)
	}
}

func checkEnv(t *testing.T, l *lambda.Client, function string, want ...string) {
	t.Helper()
	out, err := l.GetFunctionConfiguration(context.Background(), &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(function)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.Handler) != "bootstrap" || out.Runtime != lambdatypes.RuntimeProvidedal2023 {
		t.Errorf("%s: handler %s, runtime %s", function, aws.ToString(out.Handler), out.Runtime)
	}
	for _, name := range want {
		if out.Environment == nil || out.Environment.Variables[name] == "" {
			t.Errorf("%s: %s is not set", function, name)
		}
	}
}

// queueName is the name in an SQS queue URL (the physical id of a queue).
func queueName(url string) string { return url[strings.LastIndex(url, "/")+1:] }

func TestDeployRehearsal(t *testing.T) {
	m := startMoto(t)
	db := dynamodb.NewFromConfig(m.cfg)
	l := lambda.NewFromConfig(m.cfg)
	placeholder := zipOf(t, []byte("#!/bin/sh\necho placeholder: the programs' Lambda builds are tested by cmd/lambdatest\nexit 1\n"))
	m.put(t, "/code", nil)
	for _, p := range []string{"writer", "projector", "notifier"} {
		m.put(t, "/code/"+p+".zip", placeholder)
	}

	t.Run("application", func(t *testing.T) {
		ids := m.deploy(t, "dynastream-rehearsal", "template.yaml", map[string]string{
			"CodeBucket": "code", "MailFrom": "noreply@example.com", "SesIdentity": "example.com",
			"JwtIssuer": "https://issuer.example.com", "JwtAudience": "client",
		})
		checkTable(t, db, ids["Table"], store.TableInput(ids["Table"]))
		checkTable(t, db, ids["BookkeepingTable"], store.BookkeepingTableInput(ids["BookkeepingTable"]))
		checkTable(t, db, ids["EffectsTable"], store.BookkeepingTableInput(ids["EffectsTable"]))
		queue := queueName(ids["DeadLetterQueue"])
		checkMapping(t, l, ids["ProjectorFunction"], ids["Table"], queue, len(projections.Filter())) // the loop guard and the pending items (Lambda takes 5)
		checkMapping(t, l, ids["NotifierFunction"], ids["Table"], queue, 2)
		checkEnv(t, l, ids["ProjectorFunction"], "DYNAMODB_TABLE_NAME", "BOOKKEEPING_TABLE_NAME")
		// The notifier's configuration is not read back: moto resolves its
		// EVENT_BUS_NAME (!Ref EventBus) to an object it then cannot encode
		// (a 500, "Object of type EventBus is not JSON serializable").
		checkEnv(t, l, ids["WriterFunction"], "DYNAMODB_TABLE_NAME")
		for _, r := range []string{"ProjectorRole", "NotifierRole", "WriterRole", "ProjectorLogGroup", "NotifierLogGroup", "WriterLogGroup"} {
			if ids[r] == "" {
				t.Errorf("no %s", r)
			}
		}
	})

	t.Run("application on Kinesis", func(t *testing.T) {
		ids := m.deploy(t, "dynastream-kinesis-rehearsal", "template.yaml", map[string]string{
			"CodeBucket": "code", "MailFrom": "noreply@example.com", "SesIdentity": "example.com",
			"JwtIssuer": "https://issuer.example.com", "JwtAudience": "client", "StreamSource": "kinesis",
		})
		if ids["ChangeStream"] == "" {
			t.Fatalf("no ChangeStream among %v", ids)
		}
		k := kinesis.NewFromConfig(m.cfg)
		desc, err := k.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(ids["ChangeStream"])})
		if err != nil {
			t.Fatal(err)
		}
		arn := aws.ToString(desc.StreamDescriptionSummary.StreamARN)
		queue := queueName(ids["DeadLetterQueue"])
		checkMapping(t, l, ids["ProjectorFunction"], arn, queue, len(projections.Filter()))
		checkMapping(t, l, ids["NotifierFunction"], arn, queue, 2)
	})

	t.Run("consumer example", func(t *testing.T) {
		// examples/orders' function, built as its `make package` builds it
		dir := t.TempDir()
		build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, "bootstrap"), "./cmd/orders")
		build.Dir = filepath.Join("..", "examples", "orders")
		build.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build examples/orders/cmd/orders: %v\n%s", err, out)
		}
		bootstrap, err := os.ReadFile(filepath.Join(dir, "bootstrap"))
		if err != nil {
			t.Fatal(err)
		}
		m.put(t, "/code/orders.zip", zipOf(t, bootstrap))
		ids := m.deploy(t, "orders-rehearsal", filepath.Join("..", "examples", "orders", "template.yaml"), map[string]string{
			"CodeBucket": "code", "CodeKey": "orders.zip",
		})
		schema := ddblocal.Schema("PK", "SK")
		schema.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages}
		checkTable(t, db, ids["OrdersTable"], &schema)
		// stream.TableDeadLetters writes PK and SK (strings)
		checkTable(t, db, ids["DeadLetterTable"], func() *dynamodb.CreateTableInput { s := ddblocal.Schema("PK", "SK"); return &s }())
		checkMapping(t, l, ids["Function"], ids["OrdersTable"], queueName(ids["OnFailureQueue"]), 4)
		checkEnv(t, l, ids["Function"], "ORDERS_TABLE", "DEADLETTER_TABLE", "METRICS_NAMESPACE")
		for _, r := range []string{"Role", "LogGroup", "OnFailureQueue"} {
			if ids[r] == "" {
				t.Errorf("no %s", r)
			}
		}
	})
}

package ddblocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// ReuseEnv names the environment variable of a running DynamoDB Local that
// Main (and Setup) use instead of starting one. It is the harness's own
// variable, not DYNAMODB_ENDPOINT, which programs read: a DynamoDB Local
// gets slower with every table ever created on it (deleted or not: it
// keeps their streams), so a test binary reuses one only when asked to,
// and says so (its README has the measurements).
const ReuseEnv = "DDBLOCAL_ENDPOINT"

// reuse is the endpoint to reuse (from getenv(ReuseEnv)) and what to tell
// the developer about it, or "" and "" to start a fresh one.
func reuse(getenv func(string) string) (ep, notice string) {
	if ep = getenv(ReuseEnv); ep == "" {
		return "", ""
	}
	return ep, fmt.Sprintf("ddblocal: reusing the DynamoDB Local at %s ($%s); it slows down with every table created on it (see ddblocal.ReuseEnv): unset %s to start a fresh one per test binary (about 2 s)", ep, ReuseEnv, ReuseEnv)
}

// Clients returns DynamoDB and DynamoDB Streams clients for the DynamoDB
// Local at endpoint, configured as it needs: region us-east-1, fixed
// credentials (DynamoDB Local accepts any, and a real profile is never
// read), and the SDK's response checksum validation off (DynamoDB Local
// sends no checksums; with it on the SDK warns on every response).
func Clients(endpoint string) (*dynamodb.Client, *dynamodbstreams.Client) {
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	db := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(endpoint),
		DisableValidateResponseChecksum: true,
	})
	streams := dynamodbstreams.New(dynamodbstreams.Options{
		Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(endpoint),
	})
	return db, streams
}

var (
	endpoint atomic.Pointer[string]
	server   *Server
	limiter  *Limiter
)

// Setup makes a DynamoDB Local available to this process and returns its
// endpoint: a fresh one it starts (QuickStart, on a free port; found as
// Start finds it), or the one at $DDBLOCAL_ENDPOINT (ReuseEnv), saying so
// on stderr. Call Teardown when done; Main does both around a test
// binary's tests.
func Setup(ctx context.Context) (string, error) {
	if p := endpoint.Load(); p != nil {
		return *p, nil
	}
	ep, err := startOrReuse(ctx)
	if err != nil {
		return "", err
	}
	endpoint.Store(&ep)
	return ep, nil
}

// startOrReuse starts a DynamoDB Local (QuickStart, a free port) or takes
// the one at $DDBLOCAL_ENDPOINT, saying so.
func startOrReuse(ctx context.Context) (string, error) {
	ep, notice := reuse(os.Getenv)
	if notice != "" {
		fmt.Fprintln(os.Stderr, notice)
	}
	if ep == "" {
		srv, err := Start(ctx, Options{QuickStart: true})
		if err != nil {
			return "", err
		}
		server, ep = srv, srv.Endpoint
	}
	return ep, nil
}

// SetupLimited is Setup with a Limiter in front of the DynamoDB Local:
// Endpoint (and so NewTable and Limit) is the Limiter's, so every request
// of the process's tests meets DynamoDB's limits as l sets them.
func SetupLimited(ctx context.Context, l Limits) (string, error) {
	if p := endpoint.Load(); p != nil {
		if limiter == nil {
			return "", fmt.Errorf("ddblocal: SetupLimited after Setup: this process's DynamoDB Local (%s) has no limiter in front of it", *p)
		}
		return *p, nil
	}
	ep, err := startOrReuse(ctx)
	if err != nil {
		return "", err
	}
	lim, err := NewLimiter(ep, l)
	if err != nil {
		Teardown()
		return "", err
	}
	limiter, ep = lim, lim.Endpoint
	endpoint.Store(&ep)
	return ep, nil
}

// DirectEndpoint is the DynamoDB Local of Setup or SetupLimited itself,
// behind no Limiter: for a test that measures the process (its memory, say)
// and must not count the Limiter's own state, never for one that claims
// a consumer is exact.
func DirectEndpoint() string {
	if limiter != nil {
		return limiter.Backend()
	}
	return Endpoint()
}

// Limited is the Limiter SetupLimited (MainLimited) put in front of
// DynamoDB Local, nil without: its Counts are what the tests met.
func Limited() *Limiter { return limiter }

// Teardown stops the DynamoDB Local that Setup started (not one it reused),
// and the Limiter in front of it.
func Teardown() {
	if limiter != nil {
		_ = limiter.Close()
		limiter = nil
	}
	if server != nil {
		_ = server.Stop()
		server = nil
	}
	endpoint.Store(nil)
}

// Main runs a test binary's tests against DynamoDB Local and exits: call it
// from TestMain. It starts one for the whole binary, or reuses
// the one at $DDBLOCAL_ENDPOINT (ReuseEnv: it gets slower with every table
// created on it), and stops what it started.
//
//	func TestMain(m *testing.M) { ddblocal.Main(m) }
func Main(m *testing.M) {
	if _, err := Setup(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "ddblocal: cannot start DynamoDB Local:", err)
		os.Exit(1)
	}
	code := m.Run()
	Teardown()
	os.Exit(code)
}

// MainLimited is Main with a Limiter in front of the DynamoDB Local
// (SetupLimited): the binary's tests meet DynamoDB's limits as l sets them
// (throttles, unprocessed batch keys, transaction conflicts), and what
// they met is printed at the end.
//
//	func TestMain(m *testing.M) { ddblocal.MainLimited(m, ddblocal.Limits{Scale: 0.1, Unprocessed: 0.1, Seed: 1}) }
func MainLimited(m *testing.M, l Limits) {
	if _, err := SetupLimited(context.Background(), l); err != nil {
		fmt.Fprintln(os.Stderr, "ddblocal: cannot start DynamoDB Local with its limiter:", err)
		os.Exit(1)
	}
	code := m.Run()
	c := limiter.Counts()
	fmt.Fprintf(os.Stderr, "ddblocal: limiter (%s): %d requests, %d throttled, %d batch keys unprocessed, %d transaction conflicts, %d GetRecords refused\n",
		limiter.Limits(), c.Requests, c.Throttled, c.Unprocessed, c.Conflicts, c.StreamLimited)
	Teardown()
	os.Exit(code)
}

// Endpoint is the endpoint Setup (or Main) made available, "" before.
func Endpoint() string {
	if p := endpoint.Load(); p != nil {
		return *p
	}
	return ""
}

// Table is a table made for one test.
type Table struct {
	Name string
	// StreamARN is the table's stream (NEW_AND_OLD_IMAGES unless the
	// input said otherwise).
	StreamARN string
	DB        *dynamodb.Client
	Streams   *dynamodbstreams.Client
}

// Schema is the input of a table keyed by a string partition key and, when
// sk is not "", a string sort key: the most common shape, for NewTable.
func Schema(pk, sk string) dynamodb.CreateTableInput {
	in := dynamodb.CreateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(pk), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash}},
	}
	if sk != "" {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(sk), AttributeType: types.ScalarAttributeTypeS})
		in.KeySchema = append(in.KeySchema, types.KeySchemaElement{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange})
	}
	return in
}

var (
	tableSeq atomic.Int64
	unsafe   = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)
)

// TableName makes a table name from prefix (a test's name, say) that no
// other call in this process gives: characters a table name cannot hold
// become "-", and a time and a counter follow.
func TableName(prefix string) string {
	prefix = unsafe.ReplaceAllString(prefix, "-")
	if len(prefix) > 180 {
		prefix = prefix[:180]
	}
	return fmt.Sprintf("%s-%d-%d", strings.ToLower(prefix), time.Now().UnixNano()%1e9, tableSeq.Add(1))
}

// NewTable creates a table for the test t on the DynamoDB Local of Setup
// (Main), and deletes it when the test ends. Its name is in.TableName (or
// the test's name) made unique, so tests may run in parallel and a reused
// DynamoDB Local keeps no clashes; billing is on demand and the stream
// NEW_AND_OLD_IMAGES unless in says otherwise. It returns once the table
// is active.
func NewTable(t testing.TB, in dynamodb.CreateTableInput) *Table {
	t.Helper()
	ep := Endpoint()
	if ep == "" {
		t.Fatal("ddblocal: no DynamoDB Local: call ddblocal.Main from TestMain (or Setup)")
	}
	prefix := aws.ToString(in.TableName)
	if prefix == "" {
		prefix = t.Name()
	}
	in.TableName = aws.String(TableName(prefix))
	if in.BillingMode == "" && in.ProvisionedThroughput == nil {
		in.BillingMode = types.BillingModePayPerRequest
	}
	if in.StreamSpecification == nil {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
	}
	db, streams := Clients(ep)
	arn, err := CreateTable(context.Background(), db, &in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: in.TableName})
	})
	return &Table{Name: *in.TableName, StreamARN: arn, DB: db, Streams: streams}
}

// CreateTable creates a table, waits until it is active and returns its
// stream ARN ("" without a stream).
func CreateTable(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) (string, error) {
	if _, err := db.CreateTable(ctx, in); err != nil {
		return "", fmt.Errorf("ddblocal: create table %s: %w", aws.ToString(in.TableName), err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 20 * time.Millisecond })
	out, err := w.WaitForOutput(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, time.Minute)
	if err != nil {
		return "", fmt.Errorf("ddblocal: table %s: %w", aws.ToString(in.TableName), err)
	}
	if out.Table == nil {
		return "", errors.New("ddblocal: DescribeTable returned no table")
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

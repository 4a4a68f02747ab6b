package ddbtest

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/replay"
)

// Main runs the package's tests against DynamoDB Local and exits: the
// public harness's ddblocal.Main.
func Main(m *testing.M) { ddblocal.Main(m) }

// Limits are the limits of DynamoDB as AWS runs it that the suites
// claiming exactness (the replay equivalence and crash suites) meet
// (MainLimited): a tenth of AWS's per-partition units, so that a test's hot
// keys are throttled and retried as a hot key is on AWS, a share of every
// batch left unprocessed, and transactions under way at once cancelled.
var Limits = ddblocal.Limits{Scale: 0.1, Unprocessed: 0.05, Seed: 1}

// MainLimited runs the package's tests with a Limiter (Limits) in front of
// DynamoDB Local: ddblocal.MainLimited.
func MainLimited(m *testing.M) { ddblocal.MainLimited(m, Limits) }

// Clients returns clients for the test endpoint.
func Clients(t testing.TB) *ddb.Clients {
	t.Helper()
	return ClientsWith(t, ddb.Config{})
}

// ClientsWith returns clients for DynamoDB Local configured by c (its
// Endpoint, when empty, is the test endpoint: the Limiter's in a
// MainLimited package), e.g. with Faults.
func ClientsWith(t testing.TB, c ddb.Config) *ddb.Clients {
	t.Helper()
	if ddblocal.Endpoint() == "" {
		t.Fatal("ddbtest: no endpoint: call ddbtest.Main from TestMain")
	}
	if c.Endpoint == "" {
		c.Endpoint = ddblocal.Endpoint()
	}
	// The replay kit's crash schedules crash a handler between two of its
	// requests through this (outside a replay it only passes them on).
	c.APIOptions = append(c.APIOptions, replay.APIOption)
	cl, err := ddb.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// Name returns a table name unique to this test binary run.
func Name(t testing.TB) string { return ddblocal.TableName(t.Name()) }

// Table creates a fresh table with the project's schema and returns the
// clients, its name and its stream ARN; the table is deleted at cleanup.
func Table(t testing.TB) (c *ddb.Clients, name, streamARN string) {
	t.Helper()
	return table(t, Clients(t))
}

// TableDirect is Table with clients for DynamoDB Local itself, behind no
// Limiter (ddblocal.DirectEndpoint): for a test that measures the process
// (the heap tests), whose figures must not hold the Limiter's own counts.
func TableDirect(t testing.TB) (c *ddb.Clients, name, streamARN string) {
	t.Helper()
	return table(t, ClientsWith(t, ddb.Config{Endpoint: ddblocal.DirectEndpoint()}))
}

func table(t testing.TB, c *ddb.Clients) (_ *ddb.Clients, name, streamARN string) {
	t.Helper()
	name = Name(t)
	ctx := context.Background()
	arn, err := store.EnsureTable(ctx, c.DB, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.DB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return c, name, arn
}

// Bookkeeping creates a bookkeeping table (store.BookkeepingTableInput) for
// table and returns its name, and beside it the effects table of the same
// shape (<table>-effects, the programs' default EFFECTS_TABLE_NAME); both
// are deleted at cleanup.
func Bookkeeping(t testing.TB, c *ddb.Clients, table string) string {
	t.Helper()
	name := store.BookkeepingTableName(table)
	for _, n := range []string{name, store.EffectsTableName(table)} {
		if err := store.EnsureBookkeepingTable(context.Background(), c.DB, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = c.DB.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(n)})
		})
	}
	return name
}

// Endpoint is DynamoDB Local's URL (after Main started it), for programs a
// test runs.
func Endpoint() string { return ddblocal.Endpoint() }

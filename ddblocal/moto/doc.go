// Package moto runs moto_server (pip's moto[server]: Kinesis Data Streams,
// SQS, SNS, S3, CloudFormation and more, as real HTTP APIs) beside
// DynamoDB Local, for what DynamoDB Local does not serve: a Kinesis data
// stream a table's changes go to, an on-failure destination, a template's
// rehearsal.
//
//	func TestOnKinesis(t *testing.T) {
//		m := moto.ForTest(t) // a fresh moto_server, stopped at the test's end
//		kc := kinesis.NewFromConfig(m.Config())
//		// …
//	}
//
// A server listens on 127.0.0.1 only, on a free port, and is a child in a
// process group of its own that gets SIGKILL when this process dies (on
// Linux), as ddblocal's DynamoDB Local is. ForTest fails a test when
// moto_server is not on PATH; Installed lets a test that may skip say why.
// moto is not AWS: it never throttles and accepts what AWS may refuse, so
// what a test meets on it is AWS's shapes, not AWS's limits.
package moto

// Package ddb builds the DynamoDB and DynamoDB Streams clients, for AWS or for
// a local endpoint, in one place: region, credentials, retry policy and the
// options DynamoDB Local needs all live here.
//
// The retry policy is the one classification of DynamoDB errors (Transient):
// throttling, 5xx, timeouts, connection resets and transactions cancelled only
// by conflicts are retried inside the call, with full-jitter pauses from 25 ms
// doubling to 1 s, up to 8 attempts and never past the context's deadline;
// everything else fails at once. Faults injects DynamoDB's failures for tests.
package ddb

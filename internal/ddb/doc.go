// Package ddb builds the DynamoDB and DynamoDB Streams clients, for AWS or for
// a local endpoint, in one place: region, credentials, retry policy and the
// options DynamoDB Local needs all live here.
package ddb

// Package ddbtest gives tests a real DynamoDB Local: TestMain calls Main,
// which starts one (or reuses the one at $DDBLOCAL_ENDPOINT) and stops it
// after the tests; Table gives each test a fresh table with the project's
// schema. There is no mock of DynamoDB. LiveHeap reads the live heap for
// the tests that look for leaks.
package ddbtest

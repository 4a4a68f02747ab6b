// Package lambdatest tests the three Lambda bootstraps as built binaries
// (the flags of `make package`, for the host) under the runtime API of
// internal/runtimeapi, against DynamoDB Local and fakes of EventBridge and
// SES that check the wire requests: the writer's HTTP API and WebSocket
// events, the consumers' stream events of the real service's shapes,
// poison records, deadlines, panics and bad configuration. It also
// measures each bootstrap's init time and memory (go test -v shows them).
// It has tests only.
package lambdatest

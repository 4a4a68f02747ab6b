// Package stack starts the local stack — DynamoDB Local, the table and its
// checkpoint table from the code's schema, and the writer, projector and
// notifier binaries wired to it — and stops it again: SIGTERM, then SIGKILL
// after 5 s, then DynamoDB Local. devstack (`make run`) and loadgen
// (`make load`) share it. With AdminPorts, each program serves /metrics and
// /healthz on a loopback port of its own.
package stack

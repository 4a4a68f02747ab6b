// Package emf writes CloudWatch metrics in the Embedded Metric Format
// (EMF): one JSON log line per flush, which CloudWatch Logs turns into
// metrics without a PutMetricData call (so it costs the function no
// request and cannot fail it). AWS ships no EMF library for Go; this one
// follows Powertools' conventions: a namespace, a `service` dimension on
// every metric, and a ColdStart metric on a function's first invocation.
//
// Validate checks a line against the EMF specification (structure, at most
// 100 metrics and 30 dimensions per set, the units CloudWatch accepts);
// the tests run it on every line the programs emit.
//
// Delivery: a metric line is written once, to the writer given; nothing is
// retried or buffered across flushes (a lost line is a gap in a graph, not
// lost data).
//
// Specification: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package emf

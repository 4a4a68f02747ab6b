// Command loadgen is the load benchmark (`make load`): it starts the local
// stack (or uses a running one, -writer), sets up a seeded workload over
// every domain — search rooms, collaboration, locations — and drives mixed
// writes through the writer's HTTP API at given rates, one phase per rate.
//
// It times every write's effects from the write's 2xx to the moment they
// appear: combined criteria, compatibility, activity entries, reaction
// counts, in-app notifications, e-mails (their idempotency records reaching
// COMPLETED) and domain events (the notifier's outbox). It sees them by
// reading the table's own stream with a stream.Runner of its own (20 ms
// poll) and by following the outbox file, and matches each to its write
// through the ids the stream derives them from (the source record's
// eventID, the criteria version's timestamp). A phase then waits for the
// backlog to drain and reports what is still missing.
//
// Per phase it reports the achieved write rate, the writer's latency by
// route, the lag p50/p99/max per derivation, the drain time, what is
// missing, and per consumer — from its /metrics — the DynamoDB requests per
// stream record (data and checkpoint apart, counted by SDK middleware) and
// CPU seconds per 1,000 records. With -step it keeps raising the rate until
// lag p99 passes -knee-lag and prints the knee. With -catchup it pauses each
// consumer in turn through its admin endpoint while writes go on, resumes
// it, and times how fast it reads its backlog, at each ParallelizationFactor
// of -catchup-pf (catchup.go). The tables go to stdout, a
// progress line to stderr every 2 s, and the whole report to a JSON file.
// `bin/loadgen -h` lists the flags.
package main

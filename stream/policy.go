package stream

import (
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Policy is what the event source mapping does after a handler call: the
// one set of rules the Runner follows and the replay kit replays (a pure
// function, so both decide alike; policy_test.go is its table).
//
//   - A call that succeeded finishes its batch.
//   - A call that failed at a record (the lowest of its batchItemFailures,
//     or the first record when the whole call failed) finishes the records
//     before it; the rest is retried.
//   - With Bisect, a rest of more than one record is split in two halves,
//     each retried on its own with no failures counted yet, down to single
//     records.
//   - Otherwise, once the rest has failed more than MaxRetries times (its
//     failures counted across its calls), its records are dead-lettered;
//     with MaxRetries Forever (-1) never.
type Policy struct {
	// MaxRetries is the retry limit, resolved (RetryLimit): Forever (-1),
	// 0 or more.
	MaxRetries int
	Bisect     bool
	// MaxRecordAge is the event source mapping's MaximumRecordAgeInSeconds
	// (0: records never expire).
	MaxRecordAge time.Duration
}

// maxRetryWait caps every wait before a retry: the Runner's, Bootstrap's,
// a window's final call's and a Fanout branch's.
const maxRetryWait = 30 * time.Second

// retryWait is the wait before the attempt after the attempt-th failure:
// first doubled at each failure, at most maxRetryWait (first negative or
// zero: none).
func retryWait(first time.Duration, attempt int) time.Duration {
	if first <= 0 {
		return first
	}
	return min(first<<min(max(attempt-1, 0), 16), maxRetryWait)
}

// Expired splits recs, before a call, into the records older than
// MaxRecordAge at now (created says when each was created) and the rest,
// each in order: the mapping hands the expired ones not to the function but
// to its on-failure destination (condition RecordAgeExceeded).
func (pol Policy) Expired(recs []events.DynamoDBEventRecord, created func(events.DynamoDBEventRecord) time.Time, now time.Time) (expired, rest []events.DynamoDBEventRecord) {
	if pol.MaxRecordAge <= 0 {
		return nil, recs
	}
	for _, r := range recs {
		if c := created(r); !c.IsZero() && now.Sub(c) > pol.MaxRecordAge { // a record of unknown age never expires
			expired = append(expired, r)
		} else {
			rest = append(rest, r)
		}
	}
	if len(expired) == 0 {
		return nil, recs
	}
	return expired, rest
}

// Pending is records still to hand over, with the failures counted on them
// so far.
type Pending struct {
	Records  []events.DynamoDBEventRecord
	Failures int
}

// After is the policy's decision on a call of p: failedAt is the index of
// the record it failed at (-1: the call succeeded), counted whether the
// failure uses up a retry (the replay kit's injected failures stand for
// faults a retry cures and do not). It returns the records finished, the
// records to dead-letter, and what is still pending, in order, in place of
// p.
func (pol Policy) After(p Pending, failedAt int, counted bool) (finished, deadLetter []events.DynamoDBEventRecord, next []Pending) {
	if failedAt < 0 {
		return p.Records, nil, nil
	}
	finished, rest := p.Records[:failedAt], p.Records[failedAt:]
	failures := p.Failures
	if counted {
		failures++
	}
	switch {
	case pol.Bisect && len(rest) > 1:
		half := len(rest) / 2
		return finished, nil, []Pending{{Records: rest[:half]}, {Records: rest[half:]}}
	case pol.MaxRetries >= 0 && failures > pol.MaxRetries:
		return finished, rest, nil
	}
	return finished, nil, []Pending{{Records: rest, Failures: failures}}
}

// Policy is the failure policy c's settings say (after the defaults:
// Settings).
func (c Config) Policy() Policy {
	n, _ := RetryLimit(c.MaxRetries)
	return Policy{MaxRetries: n, Bisect: !c.NoBisect, MaxRecordAge: c.MaxRecordAge}
}

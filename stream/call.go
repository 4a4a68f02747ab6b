package stream

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/aws/aws-lambda-go/events"
)

// callOutcome is what a dead letter keeps of the last call that failed on
// its records: the invocation's id and Lambda's FunctionError for it.
type callOutcome struct {
	requestID     string
	functionError string // "Unhandled" for an error; "" for batch item failures
}

// call runs the handler once. It returns -1 on success, else the index of
// the lowest failed record (0 for a whole-batch failure) and the reason;
// out is the call's id and, when it failed, how.
func (r *Runner) call(ctx context.Context, sr *shardRun, recs []events.DynamoDBEventRecord, attempt int, out *callOutcome) (failedAt int, err error) {
	h, shardID := sr.h, sr.shardID
	start := r.clock()
	*out = callOutcome{requestID: r.invocationID()}
	// As Lambda's IteratorAge: the newest record's age when the batch is
	// handed to the function, not counting the handler. Its creation time
	// is the best the runner knows (sr.creationOf): ApproximateCreationDateTime
	// alone is rounded down to the second, and to the minute on DynamoDB
	// Local, which made local ages off by up to a minute.
	// the batch's last record is its newest: a lane's records are in
	// stream order (one lookup, not one per record)
	age := IteratorAge(recs[len(recs)-1:], start, sr.creationOf)
	r.counters.calls.Add(1)
	r.counters.invoked.Add(int64(len(recs)))
	r.counters.iteratorAge.Store(int64(age))
	defer func() {
		end := r.clock()
		sr.noteCall(age, err, end)
		if failedAt >= 0 {
			r.counters.failedCalls.Add(1)
			r.counters.failedInvoke.Add(int64(len(recs) - failedAt))
			r.counters.handled.Add(int64(failedAt))
		} else {
			r.counters.handled.Add(int64(len(recs)))
		}
		if r.OnBatch != nil {
			r.OnBatch(BatchStats{Consumer: r.cfg.Consumer, ShardID: shardID, Records: len(recs), Attempt: attempt,
				Failed: failedAt >= 0, IteratorAge: age, Duration: end.Sub(start)})
		}
	}()
	hctx, reason := WithFailureReasons(withIteratorAge(ctx, age))
	resp, err := safeCall(hctx, h, events.DynamoDBEvent{Records: recs})
	if err != nil {
		out.functionError = "Unhandled"
		return 0, err
	}
	if len(resp.BatchItemFailures) == 0 {
		return -1, nil
	}
	if r.cfg.NoReportBatchItemFailures && r.windows != nil {
		// Windows says a window call failed this way: without
		// ReportBatchItemFailures, Lambda retries a failed window
		// function's whole batch (its state comes back by position)
		out.functionError = "Unhandled"
		return 0, fmt.Errorf("a window call failed (ReportBatchItemFailures is off: the whole batch is retried): %s", resp.BatchItemFailures[0].ItemIdentifier)
	}
	if r.cfg.NoReportBatchItemFailures {
		sr.log.Warn("the handler reported failed items, but ReportBatchItemFailures is off: as Lambda, the call succeeded whole and they are not retried",
			"items", len(resp.BatchItemFailures), "first", resp.BatchItemFailures[0].ItemIdentifier)
		return -1, nil
	}
	if failedAt, err = lowestFailure(recs, resp); err != nil {
		return 0, err
	}
	err = fmt.Errorf("handler reported %d failed item(s), lowest %s (eventID %s)", len(resp.BatchItemFailures), recs[failedAt].Change.SequenceNumber, recs[failedAt].EventID)
	if why := reason(recs[failedAt].Change.SequenceNumber); why != nil {
		err = fmt.Errorf("%w: %w", err, why)
	}
	return failedAt, err
}

// lowestFailure is the index of the lowest record a response reports
// failed (it has some); an item that is not in the batch fails it whole.
func lowestFailure(recs []events.DynamoDBEventRecord, resp events.DynamoDBEventResponse) (int, error) {
	failedAt := len(recs)
	for _, f := range resp.BatchItemFailures {
		i := indexOf(recs, f.ItemIdentifier)
		if i < 0 {
			return 0, fmt.Errorf("handler reported unknown item %q: whole batch fails", f.ItemIdentifier)
		}
		failedAt = min(failedAt, i)
	}
	return failedAt, nil
}

func indexOf(recs []events.DynamoDBEventRecord, seq string) int {
	for i := range recs {
		if recs[i].Change.SequenceNumber == seq {
			return i
		}
	}
	return -1
}

// safeCall turns a handler panic into an error, so one poison record cannot
// crash the runner.
func safeCall(ctx context.Context, h Handler, ev events.DynamoDBEvent) (resp events.DynamoDBEventResponse, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack())
		}
	}()
	return h(ctx, ev)
}

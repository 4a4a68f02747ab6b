package ddblocal

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Limits say how a Limiter holds DynamoDB Local to what DynamoDB does at
// its edges (the zero value: AWS's own limits, no drawn unprocessed keys).
//
// DynamoDB Local "ignores provisioned throughput settings" and performs
// reads and writes as fast as it can ("DynamoDB local usage notes",
// amazondynamodb/latest/developerguide/DynamoDBLocal.UsageNotes.html): it
// never throttles, never answers a batch in part and, running transactions
// one at a time, never cancels one for a conflict. A Limiter in front of it
// does all three, as DynamoDB documents them.
type Limits struct {
	// Scale multiplies AWS's per-partition limits, 1,000 write units and
	// 3,000 read units a second per partition key of the table and of each
	// global secondary index (PartitionWriteUnits, PartitionReadUnits): at
	// 0.01 a key takes 10 write and 30 read units a second, so a load of
	// 100 writes a second meets the limits that 10,000 a second meets on
	// AWS. 0 means 1.
	Scale float64
	// Provisioned answers a throttled request as a table in provisioned
	// mode does (ProvisionedThroughputExceededException); otherwise as an
	// on-demand table does (ThrottlingException). Both carry the throttling
	// reason (TableWriteKeyRangeThroughputExceeded, …).
	Provisioned bool
	// Unprocessed is the share (0 to 1) of every BatchGetItem's keys and
	// BatchWriteItem's items answered unprocessed besides those over their
	// partition's limit (DynamoDB may leave any of them, for its own
	// reasons), drawn from Seed.
	Unprocessed float64
	Seed        uint64
	// StreamReaders is how many readers (iterator chains) may read one
	// shard at once: a third one's GetRecords calls get
	// LimitExceededException while two others are reading ("More than 2
	// processes are reading from the same streams shard at the same time.
	// Exceeding this limit may result in request throttling": the DynamoDB
	// Streams API's LimitExceededException). 0 means 2, negative no limit.
	// A reader is reading while it made a call in the last second.
	StreamReaders int
	// StreamReads is how many GetRecords calls a second one reader of a
	// shard makes before LimitExceededException; 0 means 5, negative no
	// limit. AWS documents no rate for DynamoDB Streams; Lambda polls a
	// shard 4 times a second per mapping (lambda/latest/dg/with-ddb.html),
	// and 5 a second is Kinesis Data Streams' GetRecords limit per shard:
	// a reader that polls in a loop meets it, two mappings at Lambda's
	// rate do not.
	StreamReads int
	// NoConflicts lets overlapping transactions through, as DynamoDB Local
	// does (for a test that compares).
	NoConflicts bool
	// Now is the clock the partitions' units fill by (default time.Now): a
	// test that asserts what is throttled sets its own.
	Now func() time.Time
}

// withDefaults returns a copy with the defaults filled in, or why it
// cannot be used.
func (l Limits) withDefaults() (Limits, error) {
	switch {
	case math.IsNaN(l.Scale) || math.IsInf(l.Scale, 0) || l.Scale < 0:
		return l, fmt.Errorf("ddblocal: Limits.Scale %v is not a number from 0 up", l.Scale)
	case !(l.Unprocessed >= 0 && l.Unprocessed <= 1):
		return l, fmt.Errorf("ddblocal: Limits.Unprocessed %v is not a share between 0 and 1", l.Unprocessed)
	}
	if l.Scale == 0 {
		l.Scale = 1
	}
	if l.StreamReads == 0 {
		l.StreamReads = 5
	}
	if l.StreamReaders == 0 {
		l.StreamReaders = 2
	}
	if l.Now == nil {
		l.Now = time.Now
	}
	return l, nil
}

// String says the limits as a report line does: "1/100 of AWS's
// per-partition limits".
func (l Limits) String() string {
	s := l.Scale
	if s == 0 {
		s = 1
	}
	var out string
	switch {
	case s == 1:
		out = "AWS's per-partition limits"
	case s < 1 && 1/s == float64(int64(1/s+0.5)):
		out = fmt.Sprintf("1/%d of AWS's per-partition limits", int64(1/s+0.5))
	default:
		out = fmt.Sprintf("%g× AWS's per-partition limits", s)
	}
	if l.Unprocessed > 0 {
		out += fmt.Sprintf(", %g of batch keys unprocessed", l.Unprocessed)
	}
	return out
}

// ParseScale reads a scale as a flag gives it: "0.01", "1/100" or "1".
func ParseScale(s string) (float64, error) {
	bad := fmt.Errorf("ddblocal: scale %q: want a positive number such as 0.01 or 1/100", s)
	num, den, frac := strings.Cut(strings.TrimSpace(s), "/")
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, bad
	}
	if frac {
		d, err := strconv.ParseFloat(den, 64)
		if err != nil || !(d > 0) || math.IsInf(d, 0) {
			return 0, bad
		}
		v /= d
	}
	return v, nil
}

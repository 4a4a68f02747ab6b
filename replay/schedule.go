package replay

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Schedule is one way of delivering a captured stream.
type Schedule struct {
	// Name identifies the schedule in reports; Describe adds what it does.
	Name string
	Seed uint64
	// Duplicate delivers every record twice: the whole stream, then all of
	// it again (as after a lost checkpoint), each item's order kept.
	Duplicate bool
	// Shuffle interleaves different items' records at random; each item's
	// records keep their order.
	Shuffle bool
	// MaxBatch bounds batch sizes; with RandomBatches each batch gets a
	// random size from 1 to MaxBatch (default 100).
	MaxBatch      int
	RandomBatches bool
	// FailureRate is the chance that a handler call fails — before the
	// handler runs, after it ran (its effects stay), or by reporting one
	// random record of the batch as failed. Failed batches are retried from
	// the lowest failed record, as Lambda does. These injected failures
	// stand for faults a retry cures (a throttle, a timeout, a crash): they
	// never use up the Target's retries, so a record dead-lettered in a run
	// is dead-lettered for the handler's own failures.
	FailureRate float64
	// FailAfterEffects makes the first call of every batch fail after the
	// handler ran and its effects were written — a crash before the
	// checkpoint moved — so the whole batch is delivered again.
	FailAfterEffects bool
	// CrashBetweenRequests crashes a handler call between two of its
	// requests, at every point in turn: a batch's first call crashes after
	// its first request, the next call after its second, and so on, until a
	// call makes fewer requests than that and the batch goes on as usual.
	// The request a crash comes after is carried out and its answer lost;
	// the call's later requests fail with ErrCrashed unsent; the batch is
	// delivered again, as after a Lambda that died mid-invocation. This
	// finds effects ordered wrongly — a webhook called before the
	// transaction that records it, an effect skipped when a retry finds
	// its record already written — which failures around whole calls never
	// reach. Only requests made through Transport or APIOption count, so
	// give the handler's clients those. A batch whose calls make r requests
	// costs r+1 calls; keep batches small (Fixed uses batches of one).
	// Crashes are injected failures: they use up neither retries nor
	// OnFailure.MaxAttempts (at most MaxCrashes per batch), and are not
	// counted in a dead letter's Attempts. A handler that makes requests
	// concurrently (stream.Keyed) is crashed after the k-th request to
	// start, which differs from run to run: such runs do not repeat
	// exactly for a seed.
	CrashBetweenRequests bool
	// CrashSampled makes CrashBetweenRequests crash a batch at sampled
	// points instead of after every request in turn: after its first
	// request, then each time up to twice as far along as the last crash
	// (1, 2, 4, 7, …, drawn from the schedule's seed), so a batch whose
	// calls make r requests costs O(log r) calls instead of r. Schedules
	// sets it, over batches of up to 20 records; Fixed's crash schedule,
	// in batches of one, tries every point.
	CrashSampled bool
	// ParallelizationFactor (1–10; 0 is 1) spreads the records over that
	// many lanes by partition key, as Lambda does, and delivers the lanes
	// at the same time, each in order with its own batches and failures:
	// handler calls overlap.
	ParallelizationFactor int
	// PartitionKey is the attribute the lanes hash (default "PK"); a record
	// without it is placed by its item.
	PartitionKey string
	// SkipContractCheck turns off CheckResponse: each handler answer is then
	// read as Lambda reads it (a response that breaks the contract is a
	// complete failure or a success, as the rule says), instead of failing
	// the delivery with a *ContractError.
	SkipContractCheck bool
	// Reorder and Repeat deliver the stream as a Kinesis data stream for
	// DynamoDB may (DynamoDB Developer Guide, "Change data capture for
	// Kinesis Data Streams with DynamoDB": one item's records may appear
	// in another order than its changes, and more than once). Reorder moves
	// each of an item's records up to that many places from its place
	// among the item's records; Repeat is the chance that a record comes
	// again (as DynamoDB wrote it: the same eventID, images and time), up
	// to Reorder+1 places later among its item's. Under either, each
	// record's ApproximateCreationDateTime is to the microsecond and
	// increases in the order of the writes (see stampMicros), and every record
	// delivered carries a sequence number of its own, increasing in the
	// order of delivery, as a Kinesis shard numbers what it is given: a
	// repeat is told apart by it, and a handler that compares sequence
	// numbers compares arrival, not writes. KinesisSchedules makes such
	// schedules; Check says when a run that differs agrees with the
	// baseline once each item's order is kept (Run.AssumesOrder).
	Reorder int
	Repeat  float64
	// micros times the records as a Kinesis schedule does, and changes
	// nothing else: the baseline Kinesis runs are compared with
	micros bool
	// Bootstrap starts the consumer from a scan of the table, as
	// stream.Bootstrap does, instead of the stream's beginning: the
	// position is cut at a random record, each item is read by the "scan"
	// at a random point between the cut and a random end (the table
	// changes while it is scanned), the images read go to the handler as
	// INSERT records (stream.SnapshotRecord, in a random order), and the
	// records after the cut follow through the ordering rule (stream.Gate).
	// Its state must equal the baseline's: scan plus stream equals the
	// stream from the start. BootstrapSchedules makes such schedules.
	Bootstrap bool
}

// Describe says what the schedule does to the stream, transform by
// transform: "duplicates, shuffled across items, random batches of 1–7,
// failures 10%".
func (s Schedule) Describe() string {
	var parts []string
	if s.Duplicate {
		parts = append(parts, "duplicates")
	}
	if s.Shuffle {
		parts = append(parts, "shuffled across items")
	} else {
		parts = append(parts, "stream order")
	}
	maxBatch := s.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 100
	}
	if s.RandomBatches && maxBatch > 1 {
		parts = append(parts, fmt.Sprintf("random batches of 1–%d", maxBatch))
	} else {
		parts = append(parts, fmt.Sprintf("batches of %d", maxBatch))
	}
	if s.FailureRate > 0 {
		parts = append(parts, fmt.Sprintf("failures %.0f%%", s.FailureRate*100))
	}
	if s.FailAfterEffects {
		parts = append(parts, "each batch's first call fails after its effects")
	}
	if s.CrashBetweenRequests && s.CrashSampled {
		parts = append(parts, "crashes between requests, sampled")
	} else if s.CrashBetweenRequests {
		parts = append(parts, "crashes between requests")
	}
	if s.ParallelizationFactor > 1 {
		parts = append(parts, fmt.Sprintf("parallelization %d", s.ParallelizationFactor))
	}
	if s.SkipContractCheck {
		parts = append(parts, "no contract check")
	}
	if s.Bootstrap {
		parts = append(parts, "bootstrapped from a scan")
	}
	if s.kinesis() {
		parts = append(parts, fmt.Sprintf("Kinesis: %.0f%% of records repeated, one item's records up to %d places out of order", s.Repeat*100, s.Reorder))
	}
	return strings.Join(parts, ", ")
}

// String is the name and the description.
func (s Schedule) String() string {
	if s.Name == "" {
		return s.Describe()
	}
	return s.Name + " [" + s.Describe() + "]"
}

// Parallel returns copies of schedules with a ParallelizationFactor of pf,
// their names saying so.
func Parallel(ss []Schedule, pf int) []Schedule {
	out := make([]Schedule, len(ss))
	for i, s := range ss {
		s.ParallelizationFactor = pf
		s.Name = fmt.Sprintf("%s, parallelization %d", s.Name, pf)
		out[i] = s
	}
	return out
}

// AsCaptured delivers the stream in order, once, in batches of 100: the
// baseline Check compares every other schedule with.
var AsCaptured = Schedule{Name: "as captured", MaxBatch: 100}

// Fixed returns the schedules Check always runs, before the ones it is
// given, because each finds one common bug on its own: every record twice
// in stream order (a counter that is not guarded), batches of one record (a
// handler that relies on seeing related records together), and every batch
// failing once after its effects were written (an effect repeated on
// retry), and, in batches of one, every call crashing in turn after each of
// its requests (effects in the wrong order; see CrashBetweenRequests).
func Fixed() []Schedule {
	return []Schedule{
		{Name: "duplicates only", Duplicate: true, MaxBatch: 100},
		{Name: "batch size 1", MaxBatch: 1},
		{Name: "failure after effects", MaxBatch: 100, FailAfterEffects: true},
		{Name: "crash between requests", MaxBatch: 1, CrashBetweenRequests: true},
	}
}

// MaxCrashes bounds the crashes CrashBetweenRequests injects into one
// batch: a batch whose calls make more requests than that is crashed after
// each of its first MaxCrashes requests only.
const MaxCrashes = 200

// Schedules returns n random schedules derived from seed (the same seed
// gives the same schedules). Every one shuffles the interleaving of
// different items' records (each item's order kept) and cuts random
// batches of 1 to a maximum drawn from 1–20; each delivers the whole
// stream twice with probability ½, injects failures at a rate of 0,
// 10% or 30%, one drawn per schedule, and crashes between requests with
// probability ¼ (at sampled points: CrashSampled).
func Schedules(seed uint64, n int) []Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	crashes := rand.New(rand.NewPCG(seed, 0xc4a5)) // its own source: the other draws stay as they were
	out := make([]Schedule, n)
	for i := range out {
		s := Schedule{
			Seed:          rng.Uint64(),
			Duplicate:     rng.IntN(2) == 0,
			Shuffle:       true,
			RandomBatches: true,
			MaxBatch:      1 + rng.IntN(20),
			FailureRate:   []float64{0, 0.1, 0.3}[rng.IntN(3)],
		}
		s.CrashBetweenRequests = crashes.IntN(4) == 0
		s.CrashSampled = s.CrashBetweenRequests
		s.Name = fmt.Sprintf("random #%d (seed %d)", i+1, s.Seed)
		out[i] = s
	}
	return out
}

// KinesisSchedules returns n random schedules derived from seed, as
// Schedules does, each delivering the stream as a Kinesis data stream for
// DynamoDB may: records repeated (Repeat 10% or 30%) and one item's
// records out of order by up to 1–4 places (Reorder). They are what a
// consumer of a Kinesis source runs; Schedules keeps its meaning, the
// order DynamoDB Streams keeps.
func KinesisSchedules(seed uint64, n int) []Schedule {
	rng := rand.New(rand.NewPCG(seed, 0x4b1e))
	out := Schedules(seed, n)
	for i := range out {
		out[i].Repeat = []float64{0.1, 0.3}[rng.IntN(2)]
		out[i].Reorder = 1 + rng.IntN(4)
		out[i].Name = fmt.Sprintf("kinesis #%d (seed %d)", i+1, out[i].Seed)
	}
	return out
}

// kinesis says whether s delivers as a Kinesis data stream may.
func (s Schedule) kinesis() bool { return s.Reorder > 0 || s.Repeat > 0 }

// Kinesis reports whether s delivers records as a Kinesis data stream for
// DynamoDB numbers and times them (Reorder or Repeat, or the baseline
// Check compares such runs with): each with a sequence number of its own
// (a repeat another) and a time to the microsecond, in the order of the
// writes. A State that reads an order from the records reads it by time
// then, and by sequence number otherwise.
func (s Schedule) Kinesis() bool { return s.kinesis() || s.micros }

// Order returns the records of ev in the order a schedule delivers them.
func Order(ev events.DynamoDBEvent, s Schedule) []events.DynamoDBEventRecord {
	recs, _ := order(ev, s, 0, new(stamp))
	return recs
}

// order is Order, a Kinesis schedule's sequence numbers starting after
// from and its times after the time in stamped (a Follow round's after
// the rounds before it), and the records it repeated and moved out of
// order (Stats.Repeated, Stats.Reordered).
func order(ev events.DynamoDBEvent, s Schedule, from int64, stamped *stamp) ([]events.DynamoDBEventRecord, kinesisCounts) {
	stream := ev.Records
	if s.kinesis() || s.micros {
		stream = stampMicros(stream, stamped)
	}
	recs := append([]events.DynamoDBEventRecord(nil), stream...)
	if s.Duplicate {
		recs = append(recs, stream...)
	}
	var counts kinesisCounts
	if !s.Shuffle && !s.kinesis() {
		return recs, counts
	}
	rng := rand.New(rand.NewPCG(s.Seed, 1))
	queues := map[string][]events.DynamoDBEventRecord{}
	var keys []string
	for _, r := range recs {
		k := itemKey(r)
		if _, ok := queues[k]; !ok {
			keys = append(keys, k)
		}
		queues[k] = append(queues[k], r)
	}
	if s.kinesis() {
		// repeats and places drawn apart: with Reorder 0 (Check's run in
		// order) the same records repeat
		repeats, places := rand.New(rand.NewPCG(s.Seed, 0x4b1e)), rand.New(rand.NewPCG(s.Seed, 0x4b1f))
		for _, k := range keys {
			queues[k] = kinesisOrder(queues[k], s, repeats, places, &counts)
		}
	}
	out := make([]events.DynamoDBEventRecord, 0, len(recs))
	if !s.Shuffle { // each item's records in the places its records had
		last := map[string]int{}
		for i, r := range recs {
			last[itemKey(r)] = i
		}
		for i, r := range recs {
			k := itemKey(r)
			n := 1
			if last[k] == i { // its last place takes the repeats too
				n = len(queues[k])
			}
			out = append(out, queues[k][:n]...)
			queues[k] = queues[k][n:]
		}
	} else {
		for len(keys) > 0 {
			i := rng.IntN(len(keys))
			k := keys[i]
			out = append(out, queues[k][0])
			if queues[k] = queues[k][1:]; len(queues[k]) == 0 {
				keys[i] = keys[len(keys)-1]
				keys = keys[:len(keys)-1]
			}
		}
	}
	if s.kinesis() {
		return renumber(out, from), counts
	}
	return out, counts
}

// kinesisCounts are what a Kinesis schedule did to the records.
type kinesisCounts struct{ repeated, reordered int }

// kinesisOrder is one item's records as s's Kinesis delivery gives them:
// each repeated with probability s.Repeat (the copy next to it), then
// each moved up to s.Reorder places: sorted by its place plus a draw from
// [0, Reorder+1), a record is passed only by the Reorder after it. It adds
// to n the copies it made and the records it put after a later one.
func kinesisOrder(recs []events.DynamoDBEventRecord, s Schedule, repeats, places *rand.Rand, n *kinesisCounts) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	var src []int // each one's place in recs
	for i, r := range recs {
		out, src = append(out, r), append(src, i)
		if s.Repeat > 0 && repeats.Float64() < s.Repeat {
			out, src = append(out, r), append(src, i)
			n.repeated++
		}
	}
	if s.Reorder <= 0 {
		return out
	}
	type placed struct {
		at  float64
		src int
		r   events.DynamoDBEventRecord
	}
	ps := make([]placed, len(out))
	for i, r := range out {
		ps[i] = placed{float64(i) + places.Float64()*float64(s.Reorder+1), src[i], r}
	}
	slices.SortStableFunc(ps, func(a, b placed) int { return cmp.Compare(a.at, b.at) })
	latest := -1
	for i := range ps {
		out[i] = ps[i].r
		if ps[i].src < latest {
			n.reordered++
		}
		latest = max(latest, ps[i].src)
	}
	return out
}

// stampMicros is recs, copied, each with an ApproximateCreationDateTime
// to the microsecond, as Kinesis Data Streams for DynamoDB gives it (the
// default ApproximateCreationDateTimePrecision, MICROSECOND): its own
// time (DynamoDB Streams' second, DynamoDB Local's minute), or a
// microsecond after the record before it (last, which it updates) when
// that is not later. The records, captured in the order of the writes,
// then have times in that order, as AWS's do: one item's in the order of
// its writes, and different items' as far apart as the writes were. A
// handler that orders one item's records by their time, as AWS advises
// for this source, can then be checked, and so can a consumer that orders
// what a handler derives from several items by that time.
func stampMicros(recs []events.DynamoDBEventRecord, last *stamp) []events.DynamoDBEventRecord {
	out := append([]events.DynamoDBEventRecord(nil), recs...)
	for i := range out {
		t := out[i].Change.ApproximateCreationDateTime.Time.Truncate(time.Microsecond)
		if last.given && !t.After(last.at) {
			t = last.at.Add(time.Microsecond)
		}
		out[i].Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t}
		last.at, last.given = t, true
	}
	return out
}

// stamp is the latest time stampMicros gave (none until given).
type stamp struct {
	at    time.Time
	given bool
}

// renumber gives each record a sequence number of its own in the order
// given, as a Kinesis shard numbers the records put to it (56 digits, as
// Kinesis's are); the eventID and the images stay DynamoDB's.
func renumber(recs []events.DynamoDBEventRecord, from int64) []events.DynamoDBEventRecord {
	for i := range recs {
		recs[i].Change.SequenceNumber = fmt.Sprintf("4959%052d", from+int64(i)+1)
	}
	return recs
}

func itemKey(r events.DynamoDBEventRecord) string {
	var b strings.Builder
	b.WriteString(r.EventSourceArn)
	b.WriteByte(0)
	for _, name := range []string{"PK", "SK"} {
		if v, ok := r.Change.Keys[name]; ok {
			b.WriteString(v.String())
		}
		b.WriteByte(0)
	}
	if b.Len() == len(r.EventSourceArn)+2 { // not PK/SK keys: use them all
		j, _ := json.Marshal(r.Change.Keys)
		b.Write(j)
	}
	return b.String()
}

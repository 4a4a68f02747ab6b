package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ErrInProgress is Do's and Once's answer when another attempt holds the
// key's claim longer than this attempt can wait (its context's budget):
// the effect may be running; report the record failed, and a later
// delivery finds it done or takes the claim over.
var ErrInProgress = errors.New("idempotency: another attempt holds this key")

// ErrPayloadMismatch is the answer to a call that gives a key with
// another payload than the one the key was first claimed with: the key
// was reused for a different request, so neither running the effect nor
// returning the first request's result would be right. The error is
// permanent (stream.IsPermanent reports it so): retrying cannot help.
var ErrPayloadMismatch = errors.New("idempotency: the key was used before with another payload")

type mismatchError struct{ key string }

func (e mismatchError) Error() string   { return fmt.Sprintf("%v (key %s)", ErrPayloadMismatch, e.key) }
func (e mismatchError) Unwrap() error   { return ErrPayloadMismatch }
func (e mismatchError) Permanent() bool { return true }

// State is what Begin found for a key.
type State int

// The states Begin reports.
const (
	// Started: the caller holds the key and must do the work, then End (or
	// Abort when it failed).
	Started State = iota + 1
	// Done: the work was done before; skip it.
	Done
	// Busy: another attempt holds the key and its hold has not ended; try
	// again later.
	Busy
)

// String names the state.
func (s State) String() string {
	switch s {
	case Started:
		return "Started"
	case Done:
		return "Done"
	case Busy:
		return "Busy"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Claim is what Begin found, and did, for a key.
type Claim struct {
	State State
	// Until is when the hold ends: this claim's own for Started, the
	// holder's for Busy (in the Guard's clock).
	Until time.Time
	// Result is what End recorded, for Done.
	Result string

	token string    // this attempt's claim, for Started
	end   time.Time // when the stored hold ends in real time, for Started
	hash  string    // the payload's, for Started
}

// Outcome is what Once did.
type Outcome struct {
	// Result is what the effect returned: now, or (Repeat) when it ran
	// before, as End recorded it.
	Result string
	// Repeat is true when the effect had run before and was not run again.
	Repeat bool
}

// skew is the margin for the clocks of two machines: a holder's effect
// ends that much before its stored hold (by the holder's clock), and
// another attempt takes a claim over only once the hold is that much past
// (by its own clock), so the two are apart by twice the margin even when
// the clocks differ by as much.
const skew = 100 * time.Millisecond

// DefaultMinRun is Guard.MinRun's default.
const DefaultMinRun = time.Second

func (g Guard) minRun() time.Duration {
	if g.MinRun > 0 {
		return g.MinRun
	}
	return DefaultMinRun
}

// busy is ErrInProgress for key, held until until.
func busy(key string, until time.Time) error {
	return fmt.Errorf("%w (%s, held until %s)", ErrInProgress, key, until.UTC().Format(time.RFC3339Nano))
}

// started is the Claim of an attempt that holds the key until until (in
// the Guard's clock, which said now when the real time was sent, before the
// claim was sent): the hold's end in real time is counted from then, not
// from the answer, which may come late (the SDK's retries), so the effect
// never outlives the hold that was stored.
func started(token, hash string, until, now, sent time.Time) Claim {
	return Claim{State: Started, Until: until, token: token, hash: hash, end: sent.Add(until.Sub(now))}
}

// holdOf is a record's holdUntil, or fallback when it has none.
func holdOf(it map[string]types.AttributeValue, fallback time.Time) time.Time {
	if ms, err := strconv.ParseInt(numberOf(it["holdUntil"]), 10, 64); err == nil {
		return time.UnixMilli(ms)
	}
	return fallback
}

func hashOf(payload []byte) string {
	if payload == nil {
		return ""
	}
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:])
}

// Begin claims key once, without waiting: Started when there was no
// record, or only a claim whose hold has ended (its holder crashed); Done,
// with the recorded result, when the work is complete; Busy, with the time
// the holder's hold ends, while another attempt holds it. A claim whose
// answer was lost and which the SDK sent again is recognised as the
// caller's own (a token in the claim).
//
// payload, when not nil, is what identifies the request (the record's
// change, a message's fields): its SHA-256 is kept with the record, and a
// later Begin of the same key with another payload (or none) fails with
// ErrPayloadMismatch instead of reporting Done or Busy.
//
// With Previous set, a claim taken anew whose key is completed in the
// previous table is Done, and recorded here (Guard.Previous).
func (g Guard) Begin(ctx context.Context, key string, payload []byte) (Claim, error) {
	fixed := g.Hold > 0
	g = g.defaults()
	sent := time.Now()
	now := g.clock(ctx).Now()
	until := now.Add(g.Hold)
	if d, ok := ctx.Deadline(); ok && !fixed {
		if left := time.Until(d); left > 0 {
			until = now.Add(left)
		}
	}
	hash := hashOf(payload)
	token := strconv.FormatUint(rand.Uint64(), 36)
	item := g.item(key, inProgress, now)
	item["claim"] = &types.AttributeValueMemberS{Value: token}
	item["holdUntil"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)}
	same := "attribute_not_exists(#hash)"
	values := map[string]types.AttributeValue{
		":inprogress": &types.AttributeValueMemberS{Value: inProgress},
		// a hold is taken over only once it is past by the clocks' margin
		":now": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-skew).UnixMilli(), 10)},
	}
	if hash != "" {
		item[hashAttr] = &types.AttributeValueMemberS{Value: hash}
		same, values[":hash"] = "#hash = :hash", &types.AttributeValueMemberS{Value: hash}
	}
	prev := g.readPrevious(ctx, key)
	_, err := g.DB.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(g.Table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(#pk) OR (#status = :inprogress AND holdUntil < :now AND " + same + ")"),
		ExpressionAttributeNames:            map[string]string{"#pk": g.PartitionKey, "#status": "status", "#hash": hashAttr},
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var c Claim
	var cf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &cf):
		c, err = g.found(key, cf.Item, hash, token, now, sent)
	case err != nil:
		err = fmt.Errorf("idempotency: begin %s: %w", key, err)
	default:
		c = started(token, hash, until, now, sent)
	}
	if err != nil || c.State != Started || prev == nil {
		return c, err
	}
	return g.fromPrevious(ctx, key, c, <-prev, now)
}

// previous is what Previous holds for a key.
type previous struct {
	item map[string]types.AttributeValue
	err  error
}

// readPrevious starts reading key's record in Previous (nil: no
// Previous); the channel is buffered, so an answer nobody waits for is
// dropped.
func (g Guard) readPrevious(ctx context.Context, key string) <-chan previous {
	if g.Previous == "" {
		return nil
	}
	out := make(chan previous, 1)
	go func() {
		res, err := g.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(g.Previous), Key: g.key(key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			out <- previous{err: fmt.Errorf("idempotency: read %s in the previous table %s: %w", key, g.Previous, err)}
			return
		}
		out <- previous{item: res.Item}
	}()
	return out
}

// fromPrevious settles claim c, just taken in Table at now (the Guard's
// clock), with what Previous holds for key: a completed record there makes
// it Done here (recorded, with its result); a claim there whose hold is not
// past (by the clocks' margin) makes it Busy until that hold ends, and
// releases it here, since that attempt may still be running the effect
// (one that began before the move); anything else leaves it Started. When
// Previous cannot be read, the claim is released and the error returned:
// without it, the effect might be repeated.
func (g Guard) fromPrevious(ctx context.Context, key string, c Claim, p previous, now time.Time) (Claim, error) {
	if p.err != nil {
		return Claim{}, errors.Join(p.err, g.abort(context.WithoutCancel(ctx), key, c.token))
	}
	text := func(name string) string { return textOf(p.item[name]) }
	if p.item == nil {
		return c, nil
	}
	if text(hashAttr) != c.hash && (text("status") == completed || text("status") == inProgress) {
		return Claim{}, errors.Join(mismatchError{key}, g.abort(context.WithoutCancel(ctx), key, c.token))
	}
	if text("status") == inProgress {
		// a claim without a hold (not a Guard's) is over
		if hold := holdOf(p.item, time.Time{}); !hold.Before(now.Add(-skew)) {
			return Claim{State: Busy, Until: hold}, g.abort(context.WithoutCancel(ctx), key, c.token)
		}
		return c, nil // its holder is over: taken over here
	}
	if text("status") != completed {
		return c, nil
	}
	if err := g.end(context.WithoutCancel(ctx), key, text("result"), c.hash); err != nil {
		// released, so the retry finds no claim to wait out (abort keeps
		// a record the copy did complete: it is no longer in progress)
		return Claim{}, errors.Join(err, g.abort(context.WithoutCancel(ctx), key, c.token))
	}
	return Claim{State: Done, Result: text("result")}, nil
}

// found reads the record that refused a claim.
func (g Guard) found(key string, it map[string]types.AttributeValue, hash, token string, now, sent time.Time) (Claim, error) {
	text := func(name string) string { return textOf(it[name]) }
	if it != nil && text(hashAttr) != hash {
		return Claim{}, mismatchError{key}
	}
	if text("status") == completed {
		return Claim{State: Done, Result: text("result")}, nil
	}
	if text("claim") == token {
		return started(token, hash, holdOf(it, now.Add(g.Hold)), now, sent), nil
	}
	// no holdUntil: the record went between the condition and its reading
	return Claim{State: Busy, Until: holdOf(it, now)}, nil
}

// textOf is a string attribute's value ("" for none or another type).
func textOf(v types.AttributeValue) string {
	s, _ := v.(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}

func numberOf(v types.AttributeValue) string {
	n, _ := v.(*types.AttributeValueMemberN)
	if n == nil {
		return ""
	}
	return n.Value
}

// hashAttr holds the payload's hash.
const hashAttr = "payloadHash"

// End marks key's work done, recording its result (which a later Begin or
// Once returns). It writes the whole completed record, so that it stands
// even where the claim was released meanwhile.
func (g Guard) End(ctx context.Context, key, result string) error { return g.end(ctx, key, result, "") }

// end is End, keeping the payload's hash in a record it makes anew.
func (g Guard) end(ctx context.Context, key, result, hash string) error {
	g = g.defaults()
	names := map[string]string{"#status": "status", "#result": "result", "#ttl": g.TTLAttribute}
	values := map[string]types.AttributeValue{
		":done": &types.AttributeValueMemberS{Value: completed}, ":r": &types.AttributeValueMemberS{Value: result},
		":true": &types.AttributeValueMemberBOOL{Value: true}, ":ttl": g.expires(g.clock(ctx).Now()),
	}
	set := "SET #status = :done, #result = :r, derived = :true, #ttl = if_not_exists(#ttl, :ttl)"
	if hash != "" {
		set += ", #hash = if_not_exists(#hash, :hash)"
		names["#hash"], values[":hash"] = hashAttr, &types.AttributeValueMemberS{Value: hash}
	}
	if g.ItemType != "" {
		set += ", itemType = :type"
		values[":type"] = &types.AttributeValueMemberS{Value: g.ItemType}
	}
	_, err := g.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(g.Table), Key: g.key(key),
		UpdateExpression:          aws.String(set + " REMOVE holdUntil, claim"),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	})
	if err != nil {
		return fmt.Errorf("idempotency: end %s: %w", key, err)
	}
	return nil
}

// Abort releases a key whose work failed, so that a retry does it.
func (g Guard) Abort(ctx context.Context, key string) error { return g.abort(ctx, key, "") }

// abort releases key's claim; with a token, only that claim (not one
// another attempt took over meanwhile).
func (g Guard) abort(ctx context.Context, key, token string) error {
	g = g.defaults()
	cond := "#status = :inprogress"
	values := map[string]types.AttributeValue{":inprogress": &types.AttributeValueMemberS{Value: inProgress}}
	if token != "" {
		cond += " AND claim = :token"
		values[":token"] = &types.AttributeValueMemberS{Value: token}
	}
	_, err := g.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(g.Table), Key: g.key(key),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#status": "status"},
		ExpressionAttributeValues: values,
	})
	var cf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &cf) {
		return fmt.Errorf("idempotency: abort %s: %w", key, err)
	}
	return nil
}

// Acquire is Begin, and when another attempt holds the key, waits for its
// hold to end and begins again — once, and only when the hold ends within
// this attempt's budget: its context's deadline less MinRun to do the
// work, or Hold plus MinRun without a deadline. In a stream consumer a record is
// delivered to one invocation at a time, so a held key found by a
// delivery is nearly always the claim of an attempt that crashed; waiting
// it out delays the effect instead of failing the batch (whose retries
// would run out while the hold lasts). It answers Started or Done, or
// ErrInProgress when the hold outlasts the budget or another attempt took
// the key over meanwhile.
func (g Guard) Acquire(ctx context.Context, key string, payload []byte) (Claim, error) {
	c, err := g.Begin(ctx, key, payload)
	if err != nil || c.State != Busy {
		return c, err
	}
	d := g.defaults()
	clk := d.clock(ctx)
	// past the hold by the margin a takeover needs, and a millisecond
	// (holds are kept in milliseconds)
	wait := c.Until.Sub(clk.Now()) + skew + time.Millisecond
	budget := d.Hold + d.minRun() // no deadline: a claim holds Hold at most
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl) - d.minRun()
	}
	if wait > budget {
		return Claim{}, busy(key, c.Until)
	}
	if d.OnWait != nil {
		d.OnWait(key, wait)
	}
	if err := clk.Sleep(ctx, wait); err != nil {
		return Claim{}, fmt.Errorf("idempotency: waiting out the hold of %s: %w", key, err)
	}
	if c, err = g.Begin(ctx, key, payload); err == nil && c.State == Busy {
		return Claim{}, busy(key, c.Until)
	}
	return c, err
}

// Once runs effect once for key, however often it is called, and returns
// its result: the first call claims the key (Acquire: a claim left by a
// crashed attempt is waited out and taken over), runs effect with a
// context that ends before the claim's hold does, and records its result
// (End); every later call returns that result without running effect
// (Outcome.Repeat). When effect fails, the claim is released and its error
// returned, so a retry runs it again. payload is Begin's: nil, or what
// identifies the request, so that a key reused for another request gets
// ErrPayloadMismatch.
//
// Only a crash between the effect and End can repeat the effect: where the
// receiver takes an idempotency key of its own, give it the same key.
func (g Guard) Once(ctx context.Context, key string, payload []byte, effect func(context.Context) (string, error)) (Outcome, error) {
	c, err := g.Acquire(ctx, key, payload)
	if err != nil {
		return Outcome{}, err
	}
	if c.State == Done {
		return Outcome{Result: c.Result, Repeat: true}, nil
	}
	ectx, cancel := within(ctx, c)
	result, err := effect(ectx)
	cancel()
	if err != nil {
		return Outcome{}, errors.Join(err, g.abort(context.WithoutCancel(ctx), key, c.token))
	}
	if err := g.end(context.WithoutCancel(ctx), key, result, c.hash); err != nil {
		return Outcome{}, fmt.Errorf("idempotency: the effect of %s ran but could not be marked done (a retry after the hold runs it again): %w", key, err)
	}
	return Outcome{Result: result}, nil
}

// within is ctx ending before c's stored hold does, by the clocks' margin
// and a little more (a tenth of what is left of the hold, at most a
// second), so that the holder is done before another attempt may take the
// key over. The hold's end is taken in real time from before the claim was
// sent (started): a claim whose answer came late leaves the effect less
// time, never time past the hold; and a Clock that jumps ahead for another
// attempt's wait does not cut this one's effect short.
func within(ctx context.Context, c Claim) (context.Context, context.CancelFunc) {
	left := time.Until(c.end)
	return context.WithDeadline(ctx, c.end.Add(-skew-min(max(left, 0)/10, time.Second)))
}

// Do runs effect once for key, however often it is called: Once without a
// payload or a result. Called again after that, it returns nil without
// running effect; a claim left by a crashed attempt is waited out and
// taken over; ErrInProgress only when that hold outlasts this attempt's
// budget.
func (g Guard) Do(ctx context.Context, key string, effect func(ctx context.Context) error) error {
	_, err := g.Once(ctx, key, nil, func(ctx context.Context) (string, error) { return "", effect(ctx) })
	return err
}

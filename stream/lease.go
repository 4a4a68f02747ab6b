package stream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Two Runners of one consumer on one stream would both hand every record
// to their handlers and both dead-letter what fails. A Runner therefore
// holds its consumer's lease while it runs, when its Checkpoints are also
// Leases (MemoryCheckpoints and TableCheckpoints are): one item next to
// the checkpoints, renewed every third of Config.Lease. A second Runner
// logs who holds the lease and waits (a standby), taking over when the
// holder stops, or — if it was killed — when the lease expires; a holder
// on the same host whose process is gone is taken over at once. A Runner
// that loses its lease (it could not renew it in time, or another took
// it) stops handling records and Run returns ErrLeaseLost.

// Owner identifies a Runner holding a lease.
type Owner struct {
	ID   string `json:"id"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// String names the owner for log lines: id, host and pid.
func (o Owner) String() string { return fmt.Sprintf("%s (host %s, pid %d)", o.ID, o.Host, o.PID) }

// Lease is a consumer's lease: who holds it, until when.
type Lease struct {
	Owner Owner
	Until time.Time
}

// Leases keep one owner per consumer at a time.
type Leases interface {
	// Acquire gives me the consumer's lease until until when it is free,
	// expired at now, already mine, or held by a process of my host that
	// no longer runs; otherwise it returns the lease as it stands, and
	// false.
	Acquire(ctx context.Context, consumer string, me Owner, now, until time.Time) (Lease, bool, error)
	// Renew extends my lease to until; ErrLeaseLost if it is not mine.
	Renew(ctx context.Context, consumer string, me Owner, until time.Time) error
	// Release gives my lease up (nothing if it is not mine).
	Release(ctx context.Context, consumer string, me Owner) error
}

// ErrLeaseLost is Run's error when the Runner lost its consumer's lease:
// another Runner may be handling the stream now.
var ErrLeaseLost = errors.New("stream: lease lost")

// DefaultLease is Config.Lease's default.
const DefaultLease = 15 * time.Second

// newOwner identifies this Runner.
func newOwner() Owner {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return Owner{ID: hex.EncodeToString(b), Host: host, PID: os.Getpid()}
}

// gone reports whether o is a process of this host that no longer runs.
func (o Owner) gone() bool {
	host, _ := os.Hostname()
	if o.Host != host || o.PID <= 0 || o.PID == os.Getpid() {
		return false
	}
	return !running(o.PID)
}

// free reports whether me may take l at now.
func (l Lease) free(me Owner, now time.Time) bool {
	return l.Owner.ID == "" || l.Owner.ID == me.ID || !now.Before(l.Until) || l.Owner.gone()
}

// Acquire implements Leases.
func (c *MemoryCheckpoints) Acquire(_ context.Context, consumer string, me Owner, now, until time.Time) (Lease, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leases == nil {
		c.leases = map[string]Lease{}
	}
	l := c.leases[consumer]
	if !l.free(me, now) {
		return l, false, nil
	}
	l = Lease{Owner: me, Until: until}
	c.leases[consumer] = l
	return l, true, nil
}

// Renew implements Leases.
func (c *MemoryCheckpoints) Renew(_ context.Context, consumer string, me Owner, until time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leases[consumer].Owner.ID != me.ID {
		return ErrLeaseLost
	}
	c.leases[consumer] = Lease{Owner: me, Until: until}
	return nil
}

// Release implements Leases.
func (c *MemoryCheckpoints) Release(_ context.Context, consumer string, me Owner) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leases[consumer].Owner.ID == me.ID {
		delete(c.leases, consumer)
	}
	return nil
}

// leaseShard is the lease item's sort key in the checkpoint table: no
// shard id looks like it.
const leaseShard = "#lease"

// Acquire implements Leases: the lease is an item of the checkpoint table
// (consumer, "#lease"), taken with a write conditioned on the holder read.
func (c *TableCheckpoints) Acquire(ctx context.Context, consumer string, me Owner, now, until time.Time) (Lease, bool, error) {
	held, err := c.lease(ctx, consumer)
	if err != nil {
		return Lease{}, false, err
	}
	if !held.free(me, now) {
		return held, false, nil
	}
	item := c.key(consumer, leaseShard)
	item["owner"] = &types.AttributeValueMemberS{Value: me.ID}
	item["host"] = &types.AttributeValueMemberS{Value: me.Host}
	item["pid"] = &types.AttributeValueMemberN{Value: strconv.Itoa(me.PID)}
	item["until"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)}
	in := &dynamodb.PutItemInput{TableName: aws.String(c.Table), Item: item}
	if held.Owner.ID == "" {
		in.ConditionExpression = aws.String("attribute_not_exists(#owner)")
		in.ExpressionAttributeNames = map[string]string{"#owner": "owner"}
	} else {
		in.ConditionExpression = aws.String("#owner = :seen")
		in.ExpressionAttributeNames = map[string]string{"#owner": "owner"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":seen": &types.AttributeValueMemberS{Value: held.Owner.ID}}
	}
	if _, err := c.DB.PutItem(ctx, in); err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) { // another took it meanwhile: say who
			held, err := c.lease(ctx, consumer)
			return held, false, err
		}
		return Lease{}, false, fmt.Errorf("stream: take lease of %s: %w", consumer, err)
	}
	return Lease{Owner: me, Until: until}, true, nil
}

// lease reads the consumer's lease as it stands.
func (c *TableCheckpoints) lease(ctx context.Context, consumer string) (Lease, error) {
	out, err := c.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.Table), Key: c.key(consumer, leaseShard), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Lease{}, fmt.Errorf("stream: read lease of %s: %w", consumer, err)
	}
	return leaseOf(out.Item), nil
}

func leaseOf(item map[string]types.AttributeValue) Lease {
	var l Lease
	if s, ok := item["owner"].(*types.AttributeValueMemberS); ok {
		l.Owner.ID = s.Value
	}
	if s, ok := item["host"].(*types.AttributeValueMemberS); ok {
		l.Owner.Host = s.Value
	}
	if n, ok := item["pid"].(*types.AttributeValueMemberN); ok {
		l.Owner.PID, _ = strconv.Atoi(n.Value)
	}
	if n, ok := item["until"].(*types.AttributeValueMemberN); ok {
		ms, _ := strconv.ParseInt(n.Value, 10, 64)
		l.Until = time.UnixMilli(ms)
	}
	return l
}

// Renew implements Leases.
func (c *TableCheckpoints) Renew(ctx context.Context, consumer string, me Owner, until time.Time) error {
	_, err := c.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.Table), Key: c.key(consumer, leaseShard),
		UpdateExpression:          aws.String("SET #until = :until"),
		ConditionExpression:       aws.String("#owner = :me"),
		ExpressionAttributeNames:  map[string]string{"#until": "until", "#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":until": &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)}, ":me": &types.AttributeValueMemberS{Value: me.ID}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("stream: renew lease of %s: %w", consumer, err)
	}
	return nil
}

// Release implements Leases.
func (c *TableCheckpoints) Release(ctx context.Context, consumer string, me Owner) error {
	_, err := c.DB.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(c.Table), Key: c.key(consumer, leaseShard),
		ConditionExpression:       aws.String("#owner = :me"),
		ExpressionAttributeNames:  map[string]string{"#owner": "owner"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": &types.AttributeValueMemberS{Value: me.ID}},
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return fmt.Errorf("stream: release lease of %s: %w", consumer, err)
	}
	return nil
}

// holdLease takes the consumer's lease (waiting while another Runner holds
// it) and keeps renewing it. It returns a context that ends when the lease
// is lost (cause ErrLeaseLost) and a function that stops the renewals and
// releases it; ok is false when ctx ended first.
func (r *Runner) holdLease(ctx context.Context, log *slog.Logger, leases Leases) (context.Context, func(), bool) {
	me, d := r.owner, r.cfg.Lease
	warned := false
	for {
		now := r.clock()
		l, ok, err := leases.Acquire(ctx, r.cfg.Consumer, me, now, now.Add(d))
		if err == nil && ok {
			if warned {
				log.Warn("lease taken over; this runner is the consumer's now", "owner", me.String())
			}
			break
		}
		if err != nil {
			log.Error("lease: cannot read or take it; retrying", "err", err)
		} else if !warned {
			log.Error("ANOTHER RUNNER OF THIS CONSUMER IS RUNNING: this one waits as a standby, handling nothing, until that one stops or its lease expires (two runners would both handle every record and both dead-letter)",
				"holder", l.Owner.String(), "until", l.Until.UTC().Format(time.RFC3339))
			warned = true
		}
		r.setStandby(true, l)
		wait := d / 3
		if err == nil && l.Until.After(now) {
			wait = min(wait, l.Until.Sub(now)+10*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return ctx, func() {}, false
		case <-time.After(wait):
		}
	}
	r.setStandby(false, Lease{})
	lctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		until := r.clock().Add(d)
		t := time.NewTicker(d / 3)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			// A failed renewal (a throttle, a lost connection) is tried again
			// every twentieth of the lease until it succeeds, or until the
			// lease is about to expire and another runner may take it.
			for {
				next := r.clock().Add(d)
				err := leases.Renew(lctx, r.cfg.Consumer, me, next)
				if err == nil {
					until = next
					break
				}
				if lctx.Err() != nil { // released (or lost) meanwhile
					return
				}
				if errors.Is(err, ErrLeaseLost) {
					log.Error("lease lost: another runner took this consumer over; stopping", "owner", me.String())
					cancel(ErrLeaseLost)
					return
				}
				if !r.clock().Before(until.Add(-d / 6)) {
					log.Error("lease expiring without renewal; stopping so that no two runners handle the stream", "owner", me.String(), "err", err)
					cancel(ErrLeaseLost)
					return
				}
				log.Warn("lease: renewal failed; retrying", "err", err, "expires", until.UTC().Format(time.RFC3339))
				select {
				case <-lctx.Done():
					return
				case <-time.After(d / 20):
				}
			}
		}
	})
	release := func() {
		cancel(nil) // stops the renewals (a lost lease's cause stays)
		wg.Wait()
		if err := leases.Release(context.WithoutCancel(ctx), r.cfg.Consumer, me); err != nil {
			log.Warn("lease not released (it expires by itself)", "err", err)
		}
	}
	return lctx, release, true
}

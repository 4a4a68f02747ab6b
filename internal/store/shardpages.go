package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/errs"
)

// queryShards pages through the items of base's n write shards as one
// query of one key would: in the index's sort-key order, q.page.Limit at
// most, with a cursor when the page is full (as DynamoDB gives a
// LastEvaluatedKey when a query reaches its Limit) or a shard has more
// than it gave. q may have a sort-key prefix, and no other condition or
// filter.
//
// The list's order is the sort key's; items of one sort key (ties: rating
// keys written before they ended with the recipe's id) come shard by shard,
// and within a shard in the order DynamoDB gives them, which it does not
// document for an index but keeps from one query to the next. The cursor
// is the key of the last item the page took, as one key's cursor is, and
// names its shard: the next page reads that shard on from the item itself
// (ExclusiveStartKey, so ties past a page are neither read twice nor
// lost), the shards before it from the next sort key on, the shards after
// it from the same sort key on. A cursor of the unsharded query resumes
// this one.
//
// Unless Sharding.Backfilled, the unsharded key is read too (items written
// before the shards, which `projector backfill` moves into them), and
// first: an item the backfill moves during the read is then seen in one
// query or both, never in neither, and the page keeps its first copy
// (items are told apart by their table key).
func (s *Store) queryShards(ctx context.Context, q query, base string, n int, decode func(map[string]types.AttributeValue) error) (string, error) {
	keys := shardKeys(base, n) // the shards, then the unsharded key
	readUnsharded := !s.Sharding.Backfilled
	if len(keys) == 1 {
		q.pk = keys[0]
		return s.queryPage(ctx, q, decode)
	}
	if q.skFrom != "" || q.topLevel || q.status != "" || q.liveAt != 0 {
		return "", fmt.Errorf("store: a sharded query takes a sort-key prefix and no other condition or filter")
	}
	limit := q.page.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		return "", errs.Field("limit", fmt.Sprintf("must be at most %d", MaxLimit))
	}
	pkAttr, skAttr := q.keyAttrs()
	at := -1 // the shard of the cursor's item
	var start map[string]types.AttributeValue
	if q.page.Cursor != "" {
		var err error
		for i, k := range keys { // the cursor names one of them
			sq := q
			sq.pk = k
			if start, err = sq.decodeCursor(q.page.Cursor); err == nil {
				at = i
				break
			}
		}
		if err != nil {
			return "", err
		}
	}
	read := func(i int) shardRead {
		sq := q
		sq.pk = keys[i]
		return s.readShard(ctx, sq, limit, start, shardSide(i, at))
	}
	reads := make([]shardRead, len(keys))
	last := len(keys) - 1
	if readUnsharded {
		reads[last] = read(last)
		if s.betweenShardReads != nil {
			s.betweenShardReads()
		}
	}
	var wg sync.WaitGroup
	for i := range last {
		wg.Go(func() { reads[i] = read(i) })
	}
	wg.Wait()

	var all []shardItem
	var cutAt *shardItem // the earliest last item of a shard that has more
	for i, r := range reads {
		if r.err != nil {
			return "", r.err
		}
		for pos, it := range r.items {
			all = append(all, shardItem{it: it, shard: i, pos: pos})
		}
		if r.more && len(r.items) > 0 {
			if e := all[len(all)-1]; cutAt == nil || e.compare(*cutAt, skAttr, q.desc) < 0 {
				cutAt = &e
			}
		}
	}
	slices.SortFunc(all, func(a, b shardItem) int { return a.compare(b, skAttr, q.desc) })
	// Past a cut shard's last item, that shard's unread items may come
	// first: the page ends there at the latest. A second copy of an item
	// (moved between two queries) is passed over, but the page's position
	// moves past it, so the next page does not show it again.
	seen := map[Key]bool{}
	var page []map[string]types.AttributeValue
	var pos *shardItem
	for i := range all {
		e := all[i]
		if cutAt != nil && e.compare(*cutAt, skAttr, q.desc) > 0 {
			break
		}
		k := itemKey(e.it)
		if seen[k] {
			pos = &all[i]
			continue
		}
		if len(page) == int(limit) {
			break
		}
		seen[k] = true
		page = append(page, e.it)
		pos = &all[i]
	}
	for _, it := range page {
		if err := decode(it); err != nil {
			return "", err
		}
	}
	if pos == nil || cutAt == nil && len(page) < int(limit) {
		return "", nil // every shard read to its end
	}
	it := pos.it
	return encodeCursor(map[string]types.AttributeValue{AttrPK: it[AttrPK], AttrSK: it[AttrSK], pkAttr: it[pkAttr], skAttr: it[skAttr]})
}

// A shardItem is an item of a shard's answer: its shard (the index of its
// key) and its place in that answer.
type shardItem struct {
	it         map[string]types.AttributeValue
	shard, pos int
}

// compare orders two items as a sharded list runs: by sort key (descending
// when desc), then by shard, then as their shard gave them.
func (a shardItem) compare(b shardItem, skAttr string, desc bool) int {
	c := strings.Compare(strAttr(a.it, skAttr), strAttr(b.it, skAttr))
	if desc {
		c = -c
	}
	if c == 0 {
		c = a.shard - b.shard
	}
	if c == 0 {
		c = a.pos - b.pos
	}
	return c
}

func strAttr(it map[string]types.AttributeValue, attr string) string {
	if v, ok := it[attr].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// shardFrom is where a shard's read starts, against the cursor's item.
type shardFrom int

const (
	fromTop   shardFrom = iota // no cursor: the list's start
	afterItem                  // the cursor's shard: after its item
	afterKey                   // a shard before it: after its sort key
	atKey                      // a shard after it: at its sort key
)

// shardSide is where shard i starts, the cursor's item being in shard at
// (-1: no cursor).
func shardSide(i, at int) shardFrom {
	switch {
	case at < 0:
		return fromTop
	case i == at:
		return afterItem
	case i < at:
		return afterKey
	}
	return atKey
}

// shardRead is one shard's answer: its items from where the page starts,
// at most a page, and whether it has more.
type shardRead struct {
	items []map[string]types.AttributeValue
	more  bool
	err   error
}

// readShard reads up to limit items of q.pk from where its side of the
// cursor's item starts. A key condition takes one sort-key comparison, so
// a read from a sort key under a prefix compares with the sort key alone
// and stops at the first item outside the prefix (the prefix's items are
// one run of the order). A read DynamoDB cut short before it gave an item
// (its 1 MB of items outside the prefix, say) goes on from where it
// stopped.
func (s *Store) readShard(ctx context.Context, q query, limit int32, cursor map[string]types.AttributeValue, side shardFrom) shardRead {
	_, skAttr := q.keyAttrs()
	in := q.input(s.Table)
	in.Limit = aws.Int32(limit)
	bound := strAttr(cursor, skAttr)
	switch side {
	case afterItem:
		in.ExclusiveStartKey = cursor
	case afterKey, atKey:
		op := map[bool]string{false: ">", true: "<"}[q.desc]
		if side == atKey {
			op += "="
		}
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk " + op + " :bound")
		delete(in.ExpressionAttributeValues, ":sk")
		in.ExpressionAttributeNames["#sk"] = skAttr
		in.ExpressionAttributeValues[":bound"] = &types.AttributeValueMemberS{Value: bound}
	}
	var r shardRead
	for {
		out, err := s.DB.Query(ctx, in)
		if err != nil {
			return shardRead{err: fmt.Errorf("store: query %s %s: %w", q.index, q.pk, err)}
		}
		for _, it := range out.Items {
			if !strings.HasPrefix(strAttr(it, skAttr), q.skPrefix) {
				r.more = false // past the prefix's run: the shard's list ends
				return r
			}
			r.items = append(r.items, it)
		}
		r.more = len(out.LastEvaluatedKey) > 0
		if len(r.items) > 0 || !r.more {
			return r
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

package ddblocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// shardReads counts the GetRecords calls on each shard, by reader: a
// reader is an iterator chain (a GetShardIterator's iterator and each
// NextShardIterator after it), learnt as they are handed out (an iterator
// lives 15 minutes: "A shard iterator expires 15 minutes after it is
// retrieved", API_streams_GetShardIterator). A reader is reading while it
// made a call in the last second.
type shardReads struct {
	mu     sync.Mutex
	iters  map[string]shardIter
	shards map[string]map[uint64][]time.Time // shard → reader → its calls in the last second
	chains uint64
	swept  time.Time // iters
	pruned time.Time // shards
}

type shardIter struct {
	table, shard string
	chain        uint64
	at           time.Time
}

// start is a new reader's first iterator.
func (s *shardReads) start(iter string, si shardIter) {
	s.mu.Lock()
	s.chains++
	si.chain = s.chains
	s.mu.Unlock()
	s.remember(iter, si)
}

func (s *shardReads) remember(iter string, si shardIter) {
	if iter == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iters[iter] = si
	if si.at.Sub(s.swept) > time.Minute {
		s.swept = si.at
		for k, v := range s.iters {
			if si.at.Sub(v.at) > 15*time.Minute {
				delete(s.iters, k)
			}
		}
	}
}

// take counts a call with iter at now, unless its reader made perReader
// calls in the second before, or it is a reader of a shard that readers
// others are reading: then it says why. An iterator it never saw is not
// counted.
func (s *shardReads) take(iter string, now time.Time, perReader, readers int) (shardIter, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.Sub(s.pruned) > time.Minute { // shards no one reads any more
		s.pruned = now
		for shard, active := range s.shards {
			if prune(active, now); len(active) == 0 {
				delete(s.shards, shard)
			}
		}
	}
	si, ok := s.iters[iter]
	if !ok {
		return si, ""
	}
	active := s.shards[si.shard]
	if active == nil {
		active = map[uint64][]time.Time{}
		s.shards[si.shard] = active
	}
	prune(active, now)
	calls, reading := active[si.chain]
	switch {
	case !reading && readers >= 0 && len(active) >= readers:
		return si, fmt.Sprintf("more than %d processes are reading from shard %s at the same time", readers, si.shard)
	case perReader >= 0 && len(calls) >= perReader:
		return si, fmt.Sprintf("more than %d GetRecords calls a second by one reader of shard %s", perReader, si.shard)
	}
	active[si.chain] = append(calls, now)
	return si, ""
}

// prune forgets a shard's calls of more than a second ago, and its
// readers that made none since.
func prune(active map[uint64][]time.Time, now time.Time) {
	for chain, calls := range active {
		for len(calls) > 0 && now.Sub(calls[0]) >= time.Second {
			calls = calls[1:]
		}
		if len(calls) == 0 {
			delete(active, chain)
		} else {
			active[chain] = calls
		}
	}
}

// streamTable is the table of a stream ARN (…:table/<name>/stream/<label>).
func streamTable(arn string) string {
	_, rest, _ := strings.Cut(arn, ":table/")
	name, _, _ := strings.Cut(rest, "/stream/")
	return name
}

// stream answers one DynamoDB Streams request.
func (l *Limiter) stream(r *http.Request, op string, body []byte) *reply {
	now := l.limits.Now()
	switch op {
	case "GetShardIterator":
		var in struct{ StreamArn, ShardId string }
		_ = json.Unmarshal(body, &in)
		rp := l.call(r, body)
		var out struct{ ShardIterator string }
		if rp.status == http.StatusOK && json.Unmarshal(rp.body, &out) == nil {
			l.reads.start(out.ShardIterator, shardIter{table: streamTable(in.StreamArn), shard: in.ShardId, at: now})
		}
		return rp
	case "GetRecords":
		var in struct{ ShardIterator string }
		_ = json.Unmarshal(body, &in)
		si, why := l.reads.take(in.ShardIterator, now, l.limits.StreamReads, l.limits.StreamReaders)
		p := part{table: si.table, index: "stream", key: si.shard}
		if why != "" {
			l.tally.add(l.limits.Now(), func(c *Counts, key func(part, callOp) *KeyCount) {
				c.StreamLimited++
				kc := key(p, callOp{"GetRecords", appOf(r)})
				kc.Requests++
				kc.Throttled++
			})
			return refusal("LimitExceededException", "ddblocal limiter: "+why, nil)
		}
		if si.shard != "" {
			l.tally.add(l.limits.Now(), func(_ *Counts, key func(part, callOp) *KeyCount) { key(p, callOp{"GetRecords", appOf(r)}).Requests++ })
		}
		rp := l.call(r, body)
		var out struct{ NextShardIterator string }
		if si.shard != "" && rp.status == http.StatusOK && json.Unmarshal(rp.body, &out) == nil {
			si.at = now
			l.reads.remember(out.NextShardIterator, si)
		}
		return rp
	}
	return l.call(r, body)
}

package ddblocal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// shardReads counts the GetRecords calls on each shard: the shard of an
// iterator is learnt from the GetShardIterator that gave it and carried to
// each NextShardIterator (an iterator lives 15 minutes: "A shard iterator
// expires 15 minutes after it is retrieved", API_streams_GetShardIterator).
type shardReads struct {
	mu    sync.Mutex
	iters map[string]shardIter
	calls map[string][]time.Time // shard → its calls in the last second
	swept time.Time
}

type shardIter struct {
	table, shard string
	at           time.Time
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

// take counts a call on iter's shard at now, unless limit calls were made
// on it in the second before (false). An iterator it never saw is not
// counted.
func (s *shardReads) take(iter string, now time.Time, limit int) (shardIter, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	si, ok := s.iters[iter]
	if !ok || limit < 0 {
		return si, true
	}
	calls := s.calls[si.shard]
	for len(calls) > 0 && now.Sub(calls[0]) >= time.Second {
		calls = calls[1:]
	}
	if len(calls) >= limit {
		s.calls[si.shard] = calls
		return si, false
	}
	s.calls[si.shard] = append(calls, now)
	return si, true
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
			l.reads.remember(out.ShardIterator, shardIter{streamTable(in.StreamArn), in.ShardId, now})
		}
		return rp
	case "GetRecords":
		var in struct{ ShardIterator string }
		_ = json.Unmarshal(body, &in)
		si, ok := l.reads.take(in.ShardIterator, now, l.limits.StreamReads)
		p := part{table: si.table, index: "stream", key: si.shard}
		if !ok {
			l.tally.add(func(c *Counts, key func(part, string) *KeyCount) {
				c.StreamLimited++
				kc := key(p, "GetRecords")
				kc.Requests++
				kc.Throttled++
			})
			return refusal("LimitExceededException", fmt.Sprintf("ddblocal limiter: more than %d GetRecords calls a second on shard %s", l.limits.StreamReads, si.shard), nil)
		}
		if si.shard != "" {
			l.tally.add(func(_ *Counts, key func(part, string) *KeyCount) { key(p, "GetRecords").Requests++ })
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

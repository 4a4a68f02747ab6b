package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
)

// Store reads and writes the table.
type Store struct {
	DB    *dynamodb.Client
	Table string
	// Bookkeeping is the table of the consumers' idempotency records (a
	// table without a stream, BookkeepingTableInput); "" means Table.
	Bookkeeping string
	// Effects is the table of the side effects' once records (OnceGuard:
	// the notifier's e-mails), of the same shape; "" means Bookkeeping.
	// EffectsPrevious, when set, is where those records were kept before
	// (idempotency.Guard.Previous): read so that moving them repeats no
	// e-mail.
	Effects, EffectsPrevious string
	// InviteLimits bound invites (zero: collab.DefaultInviteLimits).
	InviteLimits collab.InviteLimits
	// Quarantine receives the stored items readers cannot decode and skip
	// (nil: a process-wide one).
	Quarantine *Quarantine
	// Sharding splits the index keys every write of a kind lands on
	// (shards.go; New sets DefaultSharding). The writer's and the
	// projector's must be the same: AgreeSharding checks it against the
	// table's record.
	Sharding Sharding
	// Layout is where the cooking derivations' per-cooking items are
	// (cookingmove.go): AgreeSharding reads it from the table's record.
	Layout Layout
	// betweenShardReads, when set (tests), runs after a sharded read's
	// query of the unsharded key and before its shards'.
	betweenShardReads func()

	// The domains (domains.go), each over this Store.
	Rooms     Rooms
	Locations Locations
	Chat      Chat
	Cooking   Cooking
	Collab    Collab
	Requests  Requests
	Upkeep    Upkeep
}

// book is the bookkeeping table's name.
func (s *Store) book() string {
	if s.Bookkeeping != "" {
		return s.Bookkeeping
	}
	return s.Table
}

// effects is the once records' table's name.
func (s *Store) effects() string {
	if s.Effects != "" {
		return s.Effects
	}
	return s.book()
}

// New returns a Store on the named table, through a client like db that
// also records the writes of ddb.TrackWrites contexts (a keyed request
// learns whether its failed run may have written).
func New(db *dynamodb.Client, table string) *Store {
	tracked := dynamodb.New(db.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(slices.Clip(o.APIOptions), ddb.TrackedWrites)
	})
	s := &Store{DB: tracked, Table: table, Quarantine: &Quarantine{}, Sharding: DefaultSharding}
	s.Rooms, s.Locations, s.Chat, s.Cooking = Rooms{s}, Locations{s}, Chat{s}, Cooking{s}
	s.Collab, s.Requests, s.Upkeep = Collab{s}, Requests{s}, Upkeep{s}
	return s
}

// WithOptions is a copy of s with a client of its own, its options
// changed by opts: requests made at most n times (RetryMaxAttempts), for
// work that has somewhere better to go than a long retry, such as a drain
// that can be owed (Combiner.Nudge); or naming an application in their
// User-Agent (AppID: app/<id>), so that what they cost can be told from
// the rest of a program's requests, in CloudTrail's userAgent on AWS and
// in a ddblocal Limiter's counts (KeyCount.App) locally.
func (s *Store) WithOptions(opts ...func(*dynamodb.Options)) *Store {
	c := *s
	c.DB = dynamodb.New(s.DB.Options(), opts...)
	c.Rooms, c.Locations, c.Chat, c.Cooking = Rooms{&c}, Locations{&c}, Chat{&c}, Cooking{&c}
	c.Collab, c.Requests, c.Upkeep = Collab{&c}, Requests{&c}, Upkeep{&c}
	return &c
}

// Page asks for one page of a list.
type Page struct {
	Limit  int32
	Cursor string
}

// DefaultLimit and MaxLimit bound a page.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// item is the stored shape: key, type marker and the entity's attributes.
type head struct {
	Key
	ItemType string `dynamodbav:"itemType"`
	Derived  bool   `dynamodbav:"derived,omitempty"`
}

func marshal(h head, v any) (map[string]types.AttributeValue, error) {
	body, err := attributevalue.MarshalMap(v)
	if err != nil {
		return nil, fmt.Errorf("store: marshal %s: %w", h.ItemType, err)
	}
	hm, err := attributevalue.MarshalMap(h)
	if err != nil {
		return nil, fmt.Errorf("store: marshal head: %w", err)
	}
	for k, v := range hm {
		body[k] = v
	}
	dropEmptyMaps(body)
	return body, nil
}

// dropEmptyMaps removes empty map attributes, at any depth of maps. Reading
// treats a missing map like an empty one, and DynamoDB Local's stream
// encodes an empty map as {}, which the SDK then decodes wrongly (see
// attr's TestDynamoDBLocalEmptyMapQuirk): so the table never holds one.
func dropEmptyMaps(m map[string]types.AttributeValue) {
	for k, v := range m {
		if mv, ok := v.(*types.AttributeValueMemberM); ok {
			dropEmptyMaps(mv.Value)
			if len(mv.Value) == 0 {
				delete(m, k)
			}
		}
	}
}

func (s *Store) get(ctx context.Context, k Key, out any) (bool, error) {
	return s.getItem(ctx, k, false, out)
}

func (s *Store) getItem(ctx context.Context, k Key, consistent bool, out any) (bool, error) {
	res, err := s.DB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.Table, Key: k.AV(), ConsistentRead: aws.Bool(consistent)})
	if err != nil {
		return false, fmt.Errorf("store: get %s/%s: %w", k.PK, k.SK, err)
	}
	if res.Item == nil {
		return false, nil
	}
	// An undecodable item is quarantined and read as absent.
	return s.decode(res.Item, out), nil
}

// query is one key-condition query: on the table or a GSI, a partition, and
// either a sort-key prefix or a sort-key range.
type query struct {
	index string // "" for the table, else IndexGSI1…3
	pk    string
	// skPrefix selects begins_with(SK, skPrefix); with skFrom/skTo set it
	// only checks cursors, and the condition is SK BETWEEN skFrom AND skTo.
	skPrefix, skFrom, skTo string
	desc                   bool
	page                   Page
	// topLevel keeps only items without a parentId (top-level comments).
	topLevel bool
	// status, when set, keeps only items in that status.
	status string
	// consistent asks for a strongly consistent read (table only).
	consistent bool
	// liveAt, when set (epoch seconds), drops items whose ttl has passed:
	// DynamoDB deletes expired items late, DynamoDB Local never.
	liveAt int64
}

func (q query) keyAttrs() (pk, sk string) {
	for _, ix := range Indexes {
		if ix.Name == q.index {
			return ix.PK, ix.SK
		}
	}
	return AttrPK, AttrSK
}

func (q query) input(table string) *dynamodb.QueryInput {
	pkAttr, skAttr := q.keyAttrs()
	in := &dynamodb.QueryInput{
		TableName:                aws.String(table),
		ExpressionAttributeNames: map[string]string{"#pk": pkAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: q.pk},
		},
		ScanIndexForward: aws.Bool(!q.desc),
	}
	if q.index != "" {
		in.IndexName = aws.String(q.index)
	} else if q.consistent {
		in.ConsistentRead = aws.Bool(true)
	}
	if q.skFrom != "" || q.skPrefix != "" {
		in.ExpressionAttributeNames["#sk"] = skAttr
	}
	switch {
	case q.skFrom != "":
		in.KeyConditionExpression = aws.String("#pk = :pk AND #sk BETWEEN :from AND :to")
		in.ExpressionAttributeValues[":from"] = &types.AttributeValueMemberS{Value: q.skFrom}
		in.ExpressionAttributeValues[":to"] = &types.AttributeValueMemberS{Value: q.skTo}
	case q.skPrefix != "":
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :sk)")
		in.ExpressionAttributeValues[":sk"] = &types.AttributeValueMemberS{Value: q.skPrefix}
	default:
		in.KeyConditionExpression = aws.String("#pk = :pk")
	}
	// Filters combine: each is one parenthesised term joined by AND.
	var filters []string
	if q.topLevel {
		filters = append(filters, "attribute_not_exists(parentId)")
	}
	if q.status != "" {
		filters = append(filters, "#status = :status")
		in.ExpressionAttributeNames["#status"] = "status"
		in.ExpressionAttributeValues[":status"] = &types.AttributeValueMemberS{Value: q.status}
	}
	if q.liveAt > 0 {
		filters = append(filters, "(attribute_not_exists(#ttl) OR #ttl > :now)")
		in.ExpressionAttributeNames["#ttl"] = AttrTTL
		in.ExpressionAttributeValues[":now"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(q.liveAt, 10)}
	}
	if len(filters) > 0 {
		in.FilterExpression = aws.String(strings.Join(filters, " AND "))
	}
	return in
}

func (s *Store) queryPage(ctx context.Context, q query, decode func(map[string]types.AttributeValue) error) (next string, err error) {
	limit := q.page.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > MaxLimit {
		return "", errs.Field("limit", fmt.Sprintf("must be at most %d", MaxLimit))
	}
	start, err := q.decodeCursor(q.page.Cursor)
	if err != nil {
		return "", err
	}
	in := q.input(s.Table)
	in.Limit = aws.Int32(limit)
	in.ExclusiveStartKey = start
	out, err := s.DB.Query(ctx, in)
	if err != nil {
		return "", fmt.Errorf("store: query %s %s %s*: %w", q.index, q.pk, q.skPrefix, err)
	}
	for _, it := range out.Items {
		if err := decode(it); err != nil {
			return "", err
		}
	}
	return encodeCursor(out.LastEvaluatedKey)
}

// queryAll reads every item of a key-condition query, page by page.
func (s *Store) queryAll(ctx context.Context, q query, decode func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewQueryPaginator(s.DB, q.input(s.Table))
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("store: query %s %s %s*: %w", q.index, q.pk, q.skPrefix, err)
		}
		for _, it := range out.Items {
			if err := decode(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// Cursors are opaque to clients: base64url of the string key attributes.
func encodeCursor(k map[string]types.AttributeValue) (string, error) {
	if len(k) == 0 {
		return "", nil
	}
	m := make(map[string]string, len(k))
	for name, v := range k {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("store: cursor key %s is not a string", name)
		}
		m[name] = s.Value
	}
	b, _ := json.Marshal(m)
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeCursor decodes a cursor of this query. A cursor of another list
// (another partition, prefix or index) is invalid input, not a request for
// DynamoDB to reject with a 500.
func (q query) decodeCursor(c string) (map[string]types.AttributeValue, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	var m map[string]string
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || !q.fits(m) {
		return nil, errs.Field("cursor", "not a cursor returned by this API for this list")
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = &types.AttributeValueMemberS{Value: v}
	}
	return out, nil
}

// Key attribute values DynamoDB accepts: 2,048 bytes for a partition key,
// 1,024 for a sort key.
const (
	maxPartitionKey = 2048
	maxSortKey      = 1024
)

// fits reports whether a decoded cursor is a start key of this query: it
// names exactly the query's key attributes (the table's, plus the index's
// for an index), none empty or too long for DynamoDB, in the query's
// partition, with a sort key the query can reach (under its prefix, within
// its range). DynamoDB refuses any other start key with an error.
func (q query) fits(m map[string]string) bool {
	pkAttr, skAttr := q.keyAttrs()
	names := map[string]int{AttrPK: maxPartitionKey, AttrSK: maxSortKey, pkAttr: maxPartitionKey, skAttr: maxSortKey}
	if len(m) != len(names) {
		return false
	}
	for name, v := range m {
		limit, ok := names[name]
		if !ok || v == "" || len(v) > limit {
			return false
		}
	}
	sk := m[skAttr]
	switch {
	case m[pkAttr] != q.pk, !strings.HasPrefix(sk, q.skPrefix):
		return false
	case q.skFrom != "" && (sk < q.skFrom || sk > q.skTo):
		return false
	}
	return true
}

// cancelReasons returns the cancellation reason codes of a cancelled
// transaction, or nil for any other error.
func cancelReasons(err error) []string {
	var tc *types.TransactionCanceledException
	if !errors.As(err, &tc) {
		return nil
	}
	codes := make([]string, len(tc.CancellationReasons))
	for i, r := range tc.CancellationReasons {
		codes[i] = aws.ToString(r.Code)
	}
	return codes
}

// tryAgain is the answer to a transaction cancelled by a concurrent one
// (TransactionConflict): nothing was written, and the same request may
// succeed in a moment. Unavailable, so that an Idempotency-Key does not
// keep it as the request's answer.
func tryAgain(format string, args ...any) error {
	e := errs.New(errs.Unavailable, format, args...)
	e.RetryAfter = time.Second
	return e
}

// failedAt says whether the transaction item at index i failed its
// condition (reasons from cancelReasons).
func failedAt(reasons []string, i int) bool {
	return i >= 0 && i < len(reasons) && reasons[i] == "ConditionalCheckFailed"
}

func isConditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	return errors.As(err, &cf)
}

// batchGet reads items by key with BatchGetItem: 100 keys a call, strongly
// consistent if asked, unprocessed keys retried with backoff. each gets
// every item found (missing keys are simply absent), in no order.
func (s *Store) batchGet(ctx context.Context, keys []Key, consistent bool, each func(map[string]types.AttributeValue) error) error {
	seen := make(map[Key]bool, len(keys))
	var avs []map[string]types.AttributeValue
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			avs = append(avs, k.AV())
		}
	}
	for start := 0; start < len(avs); start += 100 {
		batch := avs[start:min(start+100, len(avs))]
		err := untilProcessed(ctx, "batch get", func() (int, error) {
			out, err := s.DB.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				s.Table: {Keys: batch, ConsistentRead: aws.Bool(consistent)},
			}})
			if err != nil {
				return 0, fmt.Errorf("store: batch get: %w", err)
			}
			for _, it := range out.Responses[s.Table] {
				if err := each(it); err != nil {
					return 0, err
				}
			}
			batch = out.UnprocessedKeys[s.Table].Keys
			return len(batch), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// snapshot reads up to 100 items by key as one serializable read
// (TransactGetItems: "Amazon DynamoDB Transactions: how it works",
// isolation levels), unlike batchGet, whose items are each read on their
// own and may be left unprocessed and read later. each gets every item
// found, in the keys' order. A read cancelled by a transaction under way on
// one of its items (TransactionConflict, after the client's retries) is
// errLostRace: read again.
func (s *Store) snapshot(ctx context.Context, keys []Key, each func(map[string]types.AttributeValue) error) error {
	if len(keys) > 100 {
		return fmt.Errorf("store: a snapshot of %d items: TransactGetItems reads 100 at most", len(keys))
	}
	gets := make([]types.TransactGetItem, len(keys))
	for i, k := range keys {
		gets[i] = types.TransactGetItem{Get: &types.Get{TableName: &s.Table, Key: k.AV()}}
	}
	out, err := s.DB.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
	if slices.Contains(cancelReasons(err), "TransactionConflict") {
		return errLostRace
	}
	if err != nil {
		return fmt.Errorf("store: snapshot read: %w", err)
	}
	for _, r := range out.Responses {
		if r.Item != nil {
			if err := each(r.Item); err != nil {
				return err
			}
		}
	}
	return nil
}

// untilProcessed calls do until it leaves nothing unprocessed, with backoff
// between calls (20 ms, doubling up to 1 s), 10 calls at the most: the one
// retry of DynamoDB's batch calls' unprocessed keys and items.
func untilProcessed(ctx context.Context, what string, do func() (left int, err error)) error {
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		left, err := do()
		if err != nil || left == 0 {
			return err
		}
		if attempt == 10 {
			return fmt.Errorf("store: %s: %d still unprocessed after %d attempts", what, left, attempt)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// PutEach writes items for several callers at once — shared BatchWriteItem
// calls of 25, at most 4 at a time — and returns one result per item (nil:
// written), so each caller learns whether its own items were written. An
// item given twice (the same key) is written once, and both get its result:
// BatchWriteItem refuses a key twice in one call.
func (s *Store) PutEach(ctx context.Context, items []map[string]types.AttributeValue) []error {
	const perCall, calls = 25, 4
	out := make([]error, len(items))
	first := make(map[Key]int, len(items)) // key → the item written for it
	var uniq []int
	for i, it := range items {
		k := itemKey(it)
		if _, ok := first[k]; !ok {
			first[k] = i
			uniq = append(uniq, i)
		}
	}
	var chunks [][]int
	for start := 0; start < len(uniq); start += perCall {
		chunks = append(chunks, uniq[start:min(start+perCall, len(uniq))])
	}
	each(calls, chunks, func(_ int, chunk []int) {
		batch := make([]map[string]types.AttributeValue, len(chunk))
		for j, i := range chunk {
			batch[j] = items[i]
		}
		err := s.BatchPut(ctx, batch)
		for _, i := range chunk {
			out[i] = err
		}
	})
	for i, it := range items {
		out[i] = out[first[itemKey(it)]]
	}
	return out
}

// itemKey is an item's primary key.
func itemKey(it map[string]types.AttributeValue) Key {
	pk, _ := it[AttrPK].(*types.AttributeValueMemberS)
	sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
	var k Key
	if pk != nil {
		k.PK = pk.Value
	}
	if sk != nil {
		k.SK = sk.Value
	}
	return k
}

// BatchPut writes items in batches of 25, retrying unprocessed items with
// backoff. Puts replace whole items, so a retried batch is harmless.
func (s *Store) BatchPut(ctx context.Context, items []map[string]types.AttributeValue) error {
	for start := 0; start < len(items); start += 25 {
		end := min(start+25, len(items))
		reqs := make([]types.WriteRequest, 0, end-start)
		for _, it := range items[start:end] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		if err := s.batchWrite(ctx, reqs); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) batchWrite(ctx context.Context, reqs []types.WriteRequest) error {
	return untilProcessed(ctx, "batch write", func() (int, error) {
		out, err := s.DB.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{s.Table: reqs}})
		if err != nil {
			return 0, fmt.Errorf("store: batch write: %w", err)
		}
		reqs = out.UnprocessedItems[s.Table]
		return len(reqs), nil
	})
}

// each calls fn for every element of xs (with its index), up to limit at
// once, and returns when all calls have.
func each[T any](limit int, xs []T, fn func(int, T)) {
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i, x := range xs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(i, x)
		})
	}
	wg.Wait()
}

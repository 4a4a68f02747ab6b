package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/chat"
	"github.com/dynastream/dynastream/internal/collab"
	"github.com/dynastream/dynastream/internal/cooking"
	"github.com/dynastream/dynastream/internal/location"
	"github.com/dynastream/dynastream/internal/room"
)

// Quarantine is where a Store's readers put the stored items they cannot
// decode (written by someone else: a migration, a console edit, an older
// version). Readers skip such an item as if it were absent, so one bad item
// never stops a derivation, a notification or a list; it is logged once per
// key (at ERROR, with the key and the reason) and counted. Scan lists them
// all, for repair. A Quarantine is safe for concurrent use.
type Quarantine struct {
	// Logger receives one line per bad item (default slog.Default()).
	Logger *slog.Logger

	mu    sync.Mutex
	seen  map[Key]bool
	count atomic.Int64
}

// quarantineMemory bounds how many keys a Quarantine remembers for
// logging once; past it, an item may be logged again.
const quarantineMemory = 10000

// Count is how many times readers skipped an undecodable item.
func (q *Quarantine) Count() int64 { return q.count.Load() }

// add records one skip of an undecodable item.
func (q *Quarantine) add(k Key, itemType string, err error) {
	q.count.Add(1)
	q.mu.Lock()
	if q.seen == nil || len(q.seen) >= quarantineMemory {
		q.seen = map[Key]bool{}
	}
	first := !q.seen[k]
	q.seen[k] = true
	q.mu.Unlock()
	if !first {
		return
	}
	log := q.Logger
	if log == nil {
		log = slog.Default()
	}
	log.Error("stored item cannot be decoded; skipped (quarantined) until repaired",
		"pk", k.PK, "sk", k.SK, "itemType", itemType, "err", err)
}

// defaultQuarantine serves Stores built without New.
var defaultQuarantine = &Quarantine{}

func (s *Store) quarantine() *Quarantine {
	if s.Quarantine != nil {
		return s.Quarantine
	}
	return defaultQuarantine
}

// decode decodes a stored item into out. An item that cannot be decoded is
// quarantined and ok is false: the caller skips it.
func (s *Store) decode(it map[string]types.AttributeValue, out any) (ok bool) {
	err := attributevalue.UnmarshalMap(it, out)
	if err == nil {
		return true
	}
	s.quarantine().add(itemKey(it), itemTypeOf(it), err)
	return false
}

func itemTypeOf(it map[string]types.AttributeValue) string {
	if v, ok := it[AttrItemType].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// shapes maps the item types readers decode to the Go types they decode
// them into; Undecodable checks an item against it.
var shapes = map[string]func() any{
	TypeRoom:               func() any { return new(room.Room) },
	TypeMember:             func() any { return new(room.Member) },
	TypeUserRoom:           func() any { return new(room.Member) },
	TypeCriteria:           func() any { return new(room.CriteriaVersion) },
	TypeCombinedCriteria:   func() any { return new(room.CombinedVersion) },
	TypeCompatibility:      func() any { return new(room.CompatibilityVersion) },
	TypeListing:            func() any { return new(room.Listing) },
	TypeActivity:           func() any { return new(room.Activity) },
	TypeLocation:           func() any { return new(location.Location) },
	TypeResource:           func() any { return new(collab.Resource) },
	TypeResourceAccess:     func() any { return new(accessItem) },
	TypeInvite:             func() any { return new(collab.Invite) },
	TypeCollaborator:       func() any { return new(collab.Collaborator) },
	TypeComment:            func() any { return new(collab.Comment) },
	TypeCommentRef:         func() any { return new(commentRef) },
	TypeReaction:           func() any { return new(collab.Reaction) },
	TypeReactionCounts:     func() any { return new(countsItem) },
	TypePreferences:        func() any { return new(collab.Preferences) },
	TypeProfile:            func() any { return new(collab.Profile) },
	TypeNotification:       func() any { return new(collab.Notification) },
	TypeIngredient:         func() any { return new(cooking.Ingredient) },
	TypeCookingPreferences: func() any { return new(cooking.Preferences) },
	TypeRecipe:             func() any { return new(cooking.Recipe) },
	TypeCookingHistory:     func() any { return new(cooking.History) },
	TypeHistoryRef:         func() any { return new(historyRef) },
	TypeCookingSession:     func() any { return new(cooking.Session) },
	TypeRecentCooking:      func() any { return new(RecentCooking) },
	TypeTrending:           func() any { return new(Trending) },
	TypeSuggestion:         func() any { return new(cooking.Suggestions) },
	TypeChatRoom:           func() any { return new(chat.Room) },
	TypeMessage:            func() any { return new(chat.Message) },
	TypeConnection:         func() any { return new(chat.Connection) },
	TypeShardRecord:        func() any { return new(ShardRecord) },
}

// Undecodable returns why a stored item cannot be decoded into the type
// its itemType names, or nil when it can (or its type has no shape).
func Undecodable(it map[string]types.AttributeValue) error {
	var h head
	if err := attributevalue.UnmarshalMap(it, &h); err != nil {
		return fmt.Errorf("key or itemType: %w", err)
	}
	mk, ok := shapes[h.ItemType]
	if !ok {
		return nil
	}
	return attributevalue.UnmarshalMap(it, mk())
}

// BadItem is an undecodable item Scan found.
type BadItem struct {
	Key      Key
	ItemType string
	Reason   string
}

// ScanQuarantine reads the whole table (segments parallel Scan segments)
// and calls found for each item readers would quarantine; found is called
// from one goroutine at a time. It returns how many items it scanned.
func (s *Store) ScanQuarantine(ctx context.Context, segments int, found func(BadItem)) (int64, error) {
	var mu sync.Mutex
	var scanned atomic.Int64
	err := s.scanSegments(ctx, segments, dynamodb.ScanInput{}, func(_ int, out *dynamodb.ScanOutput) error {
		scanned.Add(int64(len(out.Items)))
		for _, it := range out.Items {
			if err := Undecodable(it); err != nil {
				mu.Lock()
				found(BadItem{Key: itemKey(it), ItemType: itemTypeOf(it), Reason: err.Error()})
				mu.Unlock()
			}
		}
		return nil
	})
	return scanned.Load(), err
}

// scanSegments reads the table with a parallel Scan of segments segments
// (at least 1), each from in (its table, segment and count filled in),
// and hands every page to page from that segment's goroutine. The first
// error (of a read or of page) stops the other segments and is returned.
func (s *Store) scanSegments(ctx context.Context, segments int, in dynamodb.ScanInput, page func(seg int, out *dynamodb.ScanOutput) error) error {
	return s.scanSegmentsFrom(ctx, segments, in, nil, nil, page)
}

// scanSegmentsFrom is scanSegments where segment i starts after from[i]
// (when set) and is skipped when skip[i].
func (s *Store) scanSegmentsFrom(ctx context.Context, segments int, in dynamodb.ScanInput, from []map[string]types.AttributeValue, skip []bool, page func(seg int, out *dynamodb.ScanOutput) error) error {
	segments = max(segments, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, segments)
	var wg sync.WaitGroup
	for seg := range segments {
		if seg < len(skip) && skip[seg] {
			continue
		}
		wg.Go(func() {
			input := in
			input.TableName, input.Segment, input.TotalSegments = aws.String(s.Table), aws.Int32(int32(seg)), aws.Int32(int32(segments))
			if seg < len(from) && from[seg] != nil {
				input.ExclusiveStartKey = from[seg]
			}
			p := dynamodb.NewScanPaginator(s.DB, &input)
			for p.HasMorePages() {
				out, err := p.NextPage(ctx)
				if err != nil {
					err = fmt.Errorf("store: scan segment %d: %w", seg, err)
				} else {
					err = page(seg, out)
				}
				if err != nil {
					errs[seg] = err
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

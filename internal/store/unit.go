package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/room"
)

// A Unit holds back a request's transactional write so that it can be
// sent in one TransactWriteItems together with what guards it: the
// request's Idempotency-Key record and checks of the caller's access that
// would otherwise each be a request of their own (Commit).
//
// While a context carries a Unit (Defer), the store's transactional
// writes (transactWrite) are held in it instead of sent, and report
// success: the caller must Commit the unit before it tells anyone the
// write happened, and treat a Commit that did not write as "nothing
// happened" (run the request again the ordinary way). A second
// transactional write in one unit is refused (ErrHeld), so that the unit
// never commits part of what the caller meant.
type Unit struct {
	mu    sync.Mutex
	items []types.TransactWriteItem // the one write held, nil before
}

type unitKey struct{}

// ErrHeld is a second transactional write made while a unit holds one.
var ErrHeld = errors.New("store: a unit holds one transactional write only")

// Defer returns ctx carrying a new Unit.
func Defer(ctx context.Context) (context.Context, *Unit) {
	u := &Unit{}
	return context.WithValue(ctx, unitKey{}, u), u
}

// Held says whether the unit holds a write.
func (u *Unit) Held() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.items != nil
}

// holding says whether ctx carries a Unit: a write that is not
// transactional may then be made one, to be held.
func holding(ctx context.Context) bool {
	_, ok := ctx.Value(unitKey{}).(*Unit)
	return ok
}

// transactWrite sends items in one transaction, or holds them in the
// context's Unit.
func (s *Store) transactWrite(ctx context.Context, items []types.TransactWriteItem) error {
	if u, ok := ctx.Value(unitKey{}).(*Unit); ok {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.items != nil {
			return ErrHeld
		}
		u.items = append([]types.TransactWriteItem{}, items...)
		return nil
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return err
}

// holdUpdate holds an update of one item in the context's Unit: a
// transaction's Update, for a change whose answer the caller makes from
// what it read (cond says the item is still as read).
func (s *Store) holdUpdate(ctx context.Context, k Key, upd, cond string, names map[string]string, vals map[string]types.AttributeValue) error {
	return s.transactWrite(ctx, []types.TransactWriteItem{{Update: &types.Update{
		TableName: aws.String(s.Table), Key: k.AV(), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: vals,
	}}})
}

// Commit sends what u holds with extra in one transaction. It returns
// false, with no error, when a condition failed or a concurrent
// transaction got in the way: nothing was written. An error is a failure
// to ask (throttled, the network), after the client's retries.
func (s *Store) Commit(ctx context.Context, u *Unit, extra ...types.TransactWriteItem) (bool, error) {
	u.mu.Lock()
	items := append(append([]types.TransactWriteItem(nil), u.items...), extra...)
	u.mu.Unlock()
	if len(items) == 0 {
		return false, nil
	}
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if cancelReasons(err) != nil {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: commit: %w", err)
	}
	return true, nil
}

// MemberCheck is a transaction item that holds when userID is a member of
// roomID (the read the member routes would otherwise make first): the
// member item is there, and is one (its type and user); with ownerOnly,
// the member is the room's owner.
func (s *Store) MemberCheck(roomID, userID string, ownerOnly bool) types.TransactWriteItem {
	return s.Collab.roleCheck(MemberKey(roomID, userID), TypeMember, userID, ownerOnly, string(room.RoleOwner))
}

// RequestRecord is the transaction item that records a request sent with
// an Idempotency-Key as done, with its response, as EndRequest would
// after BeginRequest: on the condition that the key is new, so that a
// commit with it happens once per key. Its repeats find it with
// BeginRequest (RequestDone, or RequestMismatch for another request).
func (s *Store) RequestRecord(scope, key, fingerprint string, now time.Time, keep time.Duration, r StoredResponse) (types.TransactWriteItem, error) {
	av, err := attributevalue.MarshalMap(r)
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("store: marshal response: %w", err)
	}
	maps.Copy(av, RequestKey(scope, key).AV())
	av[AttrItemType], av[AttrDerived] = strAV(TypeRequest), &types.AttributeValueMemberBOOL{Value: true}
	av["status"], av["fingerprint"] = strAV(requestCompleted), strAV(fingerprint)
	av["startedAt"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)}
	av[AttrTTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(keep).Unix(), 10)}
	return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(s.book()), Item: av, ConditionExpression: aws.String("attribute_not_exists(PK)")}}, nil
}

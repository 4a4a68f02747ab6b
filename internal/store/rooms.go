package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
)

func put(table string, item map[string]types.AttributeValue, cond string) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(table), Item: item}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return types.TransactWriteItem{Put: p}
}

func (s Rooms) memberItems(m room.Member) (member, userRoom map[string]types.AttributeValue, err error) {
	if member, err = marshal(head{Key: MemberKey(m.RoomID, m.UserID), ItemType: TypeMember}, m); err != nil {
		return nil, nil, err
	}
	userRoom, err = marshal(head{Key: UserRoomKey(m.UserID, m.RoomID), ItemType: TypeUserRoom}, m)
	return member, userRoom, err
}

// CreateRoom writes the Room and its owner's Member and UserRoom items in one
// transaction. A room id that exists already is a Conflict.
func (s Rooms) CreateRoom(ctx context.Context, r room.Room) (room.Member, error) {
	owner := room.Member{RoomID: r.RoomID, UserID: r.CreatedByUserID, Role: room.RoleOwner, JoinedAt: r.CreatedAt}
	ri, err := marshal(head{Key: RoomKey(r.RoomID), ItemType: TypeRoom}, r)
	if err != nil {
		return owner, err
	}
	mi, ui, err := s.memberItems(owner)
	if err != nil {
		return owner, err
	}
	_, err = s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		put(s.Table, ri, "attribute_not_exists(PK)"),
		put(s.Table, mi, "attribute_not_exists(PK)"),
		put(s.Table, ui, "attribute_not_exists(PK)"),
	}})
	if reasons := cancelReasons(err); reasons != nil && reasons[0] == "ConditionalCheckFailed" {
		return owner, errs.New(errs.Conflict, "room %s already exists", r.RoomID)
	}
	if err != nil {
		return owner, fmt.Errorf("store: create room %s: %w", r.RoomID, err)
	}
	return owner, nil
}

// GetRoom reads a room; NotFound when there is none.
func (s Rooms) GetRoom(ctx context.Context, roomID string) (room.Room, error) {
	var r room.Room
	ok, err := s.get(ctx, RoomKey(roomID), &r)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "room %s not found", roomID)
	}
	return r, err
}

// AddMember writes Member and UserRoom in one transaction, on the condition
// that the room exists and the user is not a member yet.
func (s Rooms) AddMember(ctx context.Context, m room.Member) error {
	mi, ui, err := s.memberItems(m)
	if err != nil {
		return err
	}
	err = s.transactWrite(ctx, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: RoomKey(m.RoomID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		put(s.Table, mi, "attribute_not_exists(PK)"),
		put(s.Table, ui, "attribute_not_exists(PK)"),
	})
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case reasons[0] == "ConditionalCheckFailed":
			return errs.New(errs.NotFound, "room %s not found", m.RoomID)
		case reasons[1] == "ConditionalCheckFailed" || reasons[2] == "ConditionalCheckFailed":
			return errs.New(errs.Conflict, "user %s is already a member of room %s", m.UserID, m.RoomID)
		case ddb.Transient(err): // only conflicts: it may succeed in a moment
			return tryAgain("a concurrent change to room %s; try again", m.RoomID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: add member %s to %s: %w", m.UserID, m.RoomID, err)
	}
	return nil
}

// GetMember reads one membership; NotFound when the user is not a member.
func (s Rooms) GetMember(ctx context.Context, roomID, userID string) (room.Member, error) {
	var m room.Member
	// strongly consistent: it decides access, and a member just removed
	// must not pass
	ok, err := s.getItem(ctx, MemberKey(roomID, userID), true, &m)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "user %s is not a member of room %s", userID, roomID)
	}
	return m, err
}

// decodeInto appends each item a query returns to out, skipping (and
// quarantining) those that cannot be decoded.
func decodeInto[T any](s *Store, out *[]T) func(map[string]types.AttributeValue) error {
	return func(it map[string]types.AttributeValue) error {
		var v T
		if s.decode(it, &v) {
			*out = append(*out, v)
		}
		return nil
	}
}

// ListMembers returns one page of a room's members, by user id.
func (s Rooms) ListMembers(ctx context.Context, roomID string, p Page) ([]room.Member, string, error) {
	var out []room.Member
	next, err := s.queryPage(ctx, query{pk: RoomPK(roomID), skPrefix: SKPrefixMember, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// ListUserRooms returns one page of a user's memberships (UserRoom items).
func (s Rooms) ListUserRooms(ctx context.Context, userID string, p Page) ([]room.Member, string, error) {
	var out []room.Member
	next, err := s.queryPage(ctx, query{pk: UserPK(userID), skPrefix: SKPrefixRoom, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// PutCriteria appends a criteria version. Versions are keyed by timestamp;
// when two puts of one user land on the same millisecond the later one moves
// on by a millisecond, so no version is ever overwritten. The write is
// conditional, in one transaction, on the Room item existing: a deleted room
// (its cascade pending or under way) is NotFound, so no version can be left
// behind after the cascade read the partition. It returns the version as
// stored.
func (s Rooms) PutCriteria(ctx context.Context, cv room.CriteriaVersion) (room.CriteriaVersion, error) {
	t, err := ParseTimestamp(cv.Timestamp)
	if err != nil {
		return cv, fmt.Errorf("store: criteria timestamp: %w", err)
	}
	for attempt := 0; attempt < 20; attempt++ {
		cv.Timestamp = Timestamp(t.Add(time.Duration(attempt) * time.Millisecond))
		item, err := marshal(head{Key: CriteriaKey(cv.RoomID, cv.UserID, cv.Timestamp), ItemType: TypeCriteria}, cv)
		if err != nil {
			return cv, err
		}
		err = s.transactWrite(ctx, []types.TransactWriteItem{
			{ConditionCheck: &types.ConditionCheck{TableName: aws.String(s.Table), Key: RoomKey(cv.RoomID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
			put(s.Table, item, "attribute_not_exists(PK)"),
		})
		if reasons := cancelReasons(err); len(reasons) == 2 {
			switch {
			case reasons[0] == "ConditionalCheckFailed":
				return cv, errs.New(errs.NotFound, "room %s not found", cv.RoomID)
			case reasons[1] == "ConditionalCheckFailed":
				continue
			}
		}
		if err != nil {
			return cv, fmt.Errorf("store: put criteria: %w", err)
		}
		return cv, nil
	}
	return cv, errs.New(errs.Conflict, "too many concurrent criteria updates for user %s", cv.UserID)
}

// latest returns the newest decodable item under a prefix (among the
// newest four: quarantined items are skipped).
func (s Rooms) latest(ctx context.Context, pk, prefix string, out any) (bool, error) {
	found := false
	_, err := s.queryPage(ctx, query{pk: pk, skPrefix: prefix, desc: true, page: Page{Limit: 4}}, func(it map[string]types.AttributeValue) error {
		if !found {
			found = s.decode(it, out)
		}
		return nil
	})
	return found, err
}

// LatestCriteria returns a user's newest criteria version in a room.
func (s Rooms) LatestCriteria(ctx context.Context, roomID, userID string) (room.CriteriaVersion, error) {
	var cv room.CriteriaVersion
	ok, err := s.latest(ctx, RoomPK(roomID), CriteriaPrefix(userID), &cv)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "user %s has no criteria in room %s", userID, roomID)
	}
	return cv, err
}

// ListCriteria returns one page of criteria versions, newest first; all
// users' when userID is empty.
func (s Rooms) ListCriteria(ctx context.Context, roomID, userID string, p Page) ([]room.CriteriaVersion, string, error) {
	prefix := SKPrefixCriteria
	if userID != "" {
		prefix = CriteriaPrefix(userID)
	}
	var out []room.CriteriaVersion
	next, err := s.queryPage(ctx, query{pk: RoomPK(roomID), skPrefix: prefix, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

// LatestCombined returns the room's newest combined criteria.
func (s Rooms) LatestCombined(ctx context.Context, roomID string) (room.CombinedVersion, error) {
	var v room.CombinedVersion
	ok, err := s.latest(ctx, RoomPK(roomID), SKPrefixCombined, &v)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "room %s has no combined criteria yet", roomID)
	}
	return v, err
}

// LatestCompatibility returns the room's newest compatibility snapshot.
func (s Rooms) LatestCompatibility(ctx context.Context, roomID string) (room.CompatibilityVersion, error) {
	var v room.CompatibilityVersion
	ok, err := s.latest(ctx, RoomPK(roomID), SKPrefixCompatibility, &v)
	if err == nil && !ok {
		err = errs.New(errs.NotFound, "room %s has no compatibility yet (it needs two members with criteria)", roomID)
	}
	return v, err
}

// GetRooms reads several Room items with one BatchGetItem (per 100),
// strongly consistent: a derivation must see the change that triggered it.
// A room that does not exist is absent from the result.
func (s Rooms) GetRooms(ctx context.Context, roomIDs []string) (map[string]room.Room, error) {
	keys := make([]Key, len(roomIDs))
	for i, id := range roomIDs {
		keys[i] = RoomKey(id)
	}
	out := make(map[string]room.Room, len(roomIDs))
	err := s.batchGet(ctx, keys, true, func(it map[string]types.AttributeValue) error {
		var r room.Room
		if s.decode(it, &r) {
			out[r.RoomID] = r
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: read rooms: %w", err)
	}
	return out, nil
}

// SnapshotState reads what a room's combined criteria and compatibility as
// of any timestamp in [from, to] need, strongly consistent: the room's
// current members (one Query) and, for each member who joined by to, their
// criteria versions from the newest at or before from up to to (one Query
// per member, newest first, stopping there). Its cost follows the members,
// not the room's history: a member's older versions are never read. r is
// the Room item (GetRooms reads a batch's rooms at once). known are versions
// the caller holds already (from stream records): when from == to, a
// member's version at that very timestamp is all that member needs (a user
// has one version per timestamp), so it is not read again.
func (s Rooms) SnapshotState(ctx context.Context, r room.Room, from, to string, known ...room.StoredCriteria) (room.State, error) {
	st := room.State{Room: r, Exists: true}
	if err := s.queryAll(ctx, query{pk: RoomPK(r.RoomID), skPrefix: SKPrefixMember, consistent: true}, decodeInto(s.Store, &st.Members)); err != nil {
		return st, err
	}
	have := map[string]room.StoredCriteria{}
	if from == to {
		for _, k := range known {
			if k.RoomID == r.RoomID && k.Timestamp == to {
				have[k.UserID] = k
			}
		}
	}
	var users []string
	for _, m := range st.Members {
		if m.JoinedAt > to {
			continue
		}
		if k, ok := have[m.UserID]; ok {
			st.Criteria = append(st.Criteria, k)
			continue
		}
		users = append(users, m.UserID)
	}
	found := make([][]room.StoredCriteria, len(users))
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() { found[i], errs[i] = s.criteriaBetween(ctx, r.RoomID, u, from, to) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return st, err
	}
	for _, f := range found {
		st.Criteria = append(st.Criteria, f...)
	}
	sort.Slice(st.Criteria, func(i, j int) bool { return st.Criteria[i].SK < st.Criteria[j].SK })
	return st, nil
}

// criteriaBetween reads a user's criteria versions at or before to, newest
// first, down to the first one at or before from (included).
func (s Rooms) criteriaBetween(ctx context.Context, roomID, userID, from, to string) ([]room.StoredCriteria, error) {
	prefix := CriteriaPrefix(userID)
	in := query{pk: RoomPK(roomID), skPrefix: prefix, skFrom: prefix, skTo: prefix + to, desc: true, consistent: true}.input(s.Table)
	in.Limit = aws.Int32(4)
	if from == to { // one snapshot time: the newest version at or before it is all
		in.Limit = aws.Int32(1)
	}
	var out []room.StoredCriteria
	for {
		res, err := s.DB.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("store: read criteria of %s in %s: %w", userID, roomID, err)
		}
		for _, it := range res.Items {
			var c room.StoredCriteria
			if !s.decode(it, &c.CriteriaVersion) {
				continue
			}
			if sk, ok := it[AttrSK].(*types.AttributeValueMemberS); ok {
				c.SK = sk.Value
			}
			out = append(out, c)
			if c.Timestamp <= from {
				return out, nil
			}
		}
		if res.LastEvaluatedKey == nil {
			return out, nil
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// RemoveMember deletes Member and UserRoom in one transaction; NotFound when
// the user is not a member.
func (s Rooms) RemoveMember(ctx context.Context, roomID, userID string) error {
	del := func(k Key) types.TransactWriteItem {
		return types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String(s.Table), Key: k.AV(), ConditionExpression: aws.String("attribute_exists(PK)")}}
	}
	err := s.transactWrite(ctx, []types.TransactWriteItem{del(MemberKey(roomID, userID)), del(UserRoomKey(userID, roomID))})
	if reasons := cancelReasons(err); reasons != nil {
		switch {
		case failedAt(reasons, 0) || failedAt(reasons, 1):
			return errs.New(errs.NotFound, "user %s is not a member of room %s", userID, roomID)
		case ddb.Transient(err): // only conflicts: it may succeed in a moment
			return tryAgain("a concurrent change to room %s; try again", roomID)
		}
	}
	if err != nil {
		return fmt.Errorf("store: remove member %s from %s: %w", userID, roomID, err)
	}
	return nil
}

// UpdateRoomContext replaces a room's context, recording when and by whom.
func (s Rooms) UpdateRoomContext(ctx context.Context, roomID string, c room.Context, at, by string) (room.Room, error) {
	av, err := attributevalue.Marshal(c)
	if err != nil {
		return room.Room{}, fmt.Errorf("store: marshal context: %w", err)
	}
	if m, ok := av.(*types.AttributeValueMemberM); ok {
		dropEmptyMaps(m.Value)
	}
	out, err := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.Table), Key: RoomKey(roomID).AV(),
		UpdateExpression:         aws.String("SET #ctx = :ctx, updatedAt = :at, updatedByUserId = :by"),
		ConditionExpression:      aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames: map[string]string{"#ctx": "context"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ctx": av, ":at": &types.AttributeValueMemberS{Value: at}, ":by": &types.AttributeValueMemberS{Value: by},
		},
		ReturnValues: types.ReturnValueAllNew,
	})
	if isConditionFailed(err) {
		return room.Room{}, errs.New(errs.NotFound, "room %s not found", roomID)
	}
	if err != nil {
		return room.Room{}, fmt.Errorf("store: update room %s: %w", roomID, err)
	}
	var r room.Room
	if err := attributevalue.UnmarshalMap(out.Attributes, &r); err != nil {
		return r, fmt.Errorf("store: decode room: %w", err)
	}
	return r, nil
}

// DeleteRoom deletes the Room item and, in the same transaction, seals the
// room's chat (its ChatRoom item gets sealedAt: nobody connects, joins or
// posts there again, and its history is NotFound for everyone); the
// projector's cascade removes the rest of the room (its partition, its
// members' UserRoom items and its chat's messages) and the notifier closes
// the chat's connections.
func (s Rooms) DeleteRoom(ctx context.Context, roomID, at string) error {
	_, err := s.DB.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Delete: &types.Delete{TableName: aws.String(s.Table), Key: RoomKey(roomID).AV(), ConditionExpression: aws.String("attribute_exists(PK)")}},
		s.Chat.sealRoom(roomID, at),
	}})
	if failedAt(cancelReasons(err), 0) {
		return errs.New(errs.NotFound, "room %s not found", roomID)
	}
	if err != nil {
		return fmt.Errorf("store: delete room %s: %w", roomID, err)
	}
	return nil
}

// ListCompatibility returns one page of a room's compatibility snapshots,
// newest first.
func (s Rooms) ListCompatibility(ctx context.Context, roomID string, p Page) ([]room.CompatibilityVersion, string, error) {
	var out []room.CompatibilityVersion
	next, err := s.queryPage(ctx, query{pk: RoomPK(roomID), skPrefix: SKPrefixCompatibility, desc: true, page: p}, decodeInto(s.Store, &out))
	return out, next, err
}

package store_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/room"
	"github.com/dynastream/dynastream/internal/store"
)

// A stored item that cannot be decoded is skipped by reads — a list leaves
// it out, a get finds nothing — logged once per key, counted per skip.
func TestReadsSkipUndecodableItems(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	f.st.Quarantine = &store.Quarantine{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := f.st.Rooms.CreateRoom(f.ctx, room.Room{RoomID: "r", Name: "r", CreatedByUserID: "alice", CreatedAt: "2026-01-01T00:00:00.000Z", SearchType: room.SearchRent}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.Rooms.AddMember(f.ctx, room.Member{RoomID: "r", UserID: "bob", Role: room.RoleMember, JoinedAt: "2026-01-01T00:00:01.000Z"}); err != nil {
		t.Fatal(err)
	}
	bad := store.MemberKey("r", "mallory")
	item := bad.AV()
	item["itemType"] = &types.AttributeValueMemberS{Value: store.TypeMember}
	item["userId"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "mallory"}}} // a string in every valid item
	if _, err := f.db.PutItem(f.ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ms, _, err := f.st.Rooms.ListMembers(f.ctx, "r", store.Page{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.UserID)
		}
		if strings.Join(ids, ",") != "alice,bob" {
			t.Errorf("members %v, want alice and bob", ids)
		}
	}
	if _, err := f.st.Rooms.GetMember(f.ctx, "r", "mallory"); !errs.Is(err, errs.NotFound) {
		t.Errorf("get of the bad item: %v, want NotFound", err)
	}
	if n := f.st.Quarantine.Count(); n != 3 {
		t.Errorf("count %d, want 3 (one per skip)", n)
	}
	if n := strings.Count(logs.String(), "cannot be decoded"); n != 1 || !strings.Contains(logs.String(), bad.SK) {
		t.Errorf("logged %d times, want once with the key:\n%s", n, logs.String())
	}
}

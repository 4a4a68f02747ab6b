package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableState is the derived state kept in a DynamoDB table: the items
// Derived selects. Use its Reset and State methods in a Target.
type TableState struct {
	DB    *dynamodb.Client
	Table string
	// Derived selects the items that belong to the derived state.
	Derived func(item map[string]types.AttributeValue) bool
	// Ignore names attributes State leaves out of every item: ones that
	// differ from run to run by design, such as the TTL of idempotency
	// markers (counted from the real time, not from the records).
	Ignore []string
}

// DerivedFlag selects items carrying derived = true.
func DerivedFlag(item map[string]types.AttributeValue) bool {
	b, ok := item["derived"].(*types.AttributeValueMemberBOOL)
	return ok && b.Value
}

func (ts TableState) scan(ctx context.Context, each func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewScanPaginator(ts.DB, &dynamodb.ScanInput{TableName: aws.String(ts.Table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("replay: scan %s: %w", ts.Table, err)
		}
		for _, it := range out.Items {
			if ts.Derived(it) {
				if err := each(it); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Reset deletes the derived items.
func (ts TableState) Reset(ctx context.Context) error {
	desc, err := ts.DB.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(ts.Table)})
	if err != nil {
		return fmt.Errorf("replay: describe %s: %w", ts.Table, err)
	}
	var reqs []types.WriteRequest
	err = ts.scan(ctx, func(it map[string]types.AttributeValue) error {
		key := map[string]types.AttributeValue{}
		for _, k := range desc.Table.KeySchema {
			key[*k.AttributeName] = it[*k.AttributeName]
		}
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key}})
		return nil
	})
	if err != nil {
		return err
	}
	if err := batchWrite(ctx, ts.DB, ts.Table, reqs); err != nil {
		return fmt.Errorf("replay: delete derived items: %w", err)
	}
	return nil
}

// State returns the derived items as plain values (Values: numbers exact,
// sets sorted), in a stable order, without the attributes Ignore names.
func (ts TableState) State(ctx context.Context) (any, error) {
	type entry struct {
		key  string
		item map[string]any
	}
	var items []entry
	err := ts.scan(ctx, func(it map[string]types.AttributeValue) error {
		if len(ts.Ignore) > 0 {
			it = maps.Clone(it)
			for _, name := range ts.Ignore {
				delete(it, name)
			}
		}
		m, err := Values(it)
		if err != nil {
			return fmt.Errorf("replay: read %s: %w", ts.Table, err)
		}
		k, _ := json.Marshal(m)
		items = append(items, entry{string(k), m})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].key < items[j].key })
	out := make([]map[string]any, len(items))
	for i, e := range items {
		out[i] = e.item
	}
	return out, nil
}

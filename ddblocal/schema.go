package ddblocal

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// schema is what the Limiter knows of a table: its primary key's
// attributes (partition key first) and each global secondary index's
// partition key, the partitions it meters.
type schema struct {
	key     []string
	hash    string
	indexes []index // in name order
}

// index is a global secondary index's name and partition key attribute.
type index struct{ name, hash string }

// indexHash is the partition key attribute of the index named name ("",
// false: none such).
func (sc *schema) indexHash(name string) (string, bool) {
	for _, ix := range sc.indexes {
		if ix.name == name {
			return ix.hash, true
		}
	}
	return "", false
}

// schemas reads tables' key schemas from DynamoDB Local (DescribeTable),
// once per table; a CreateTable or DeleteTable through the Limiter forgets
// the name, so a table made again with another schema is read again.
type schemas struct {
	db *dynamodb.Client
	mu sync.Mutex
	m  map[string]*schema
}

func (s *schemas) get(ctx context.Context, table string) (*schema, error) {
	s.mu.Lock()
	sc := s.m[table]
	s.mu.Unlock()
	if sc != nil {
		return sc, nil
	}
	out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("ddblocal: limiter: describe table %s: %w", table, err)
	}
	sc = &schema{}
	for _, k := range out.Table.KeySchema {
		if k.KeyType == types.KeyTypeHash {
			sc.hash = aws.ToString(k.AttributeName)
			sc.key = append([]string{sc.hash}, sc.key...)
		} else {
			sc.key = append(sc.key, aws.ToString(k.AttributeName))
		}
	}
	for _, g := range out.Table.GlobalSecondaryIndexes {
		for _, k := range g.KeySchema {
			if k.KeyType == types.KeyTypeHash {
				sc.indexes = append(sc.indexes, index{aws.ToString(g.IndexName), aws.ToString(k.AttributeName)})
			}
		}
	}
	slices.SortFunc(sc.indexes, func(a, b index) int { return strings.Compare(a.name, b.name) })
	s.mu.Lock()
	s.m[table] = sc
	s.mu.Unlock()
	return sc, nil
}

func (s *schemas) forget(table string) {
	s.mu.Lock()
	delete(s.m, table)
	s.mu.Unlock()
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/internal/ddb"
)

// Attribute and index names of the table.
const (
	AttrPK       = "PK"
	AttrSK       = "SK"
	AttrItemType = "itemType"
	AttrDerived  = "derived"
	AttrTTL      = "ttl"
	IndexGSI1    = "GSI1"
	IndexGSI2    = "GSI2"
	IndexGSI3    = "GSI3"
)

// Indexes lists the overloaded GSIs with their key attributes.
var Indexes = []ddb.Index{
	{Name: IndexGSI1, PK: "GSI1PK", SK: "GSI1SK"},
	{Name: IndexGSI2, PK: "GSI2PK", SK: "GSI2SK"},
	{Name: IndexGSI3, PK: "GSI3PK", SK: "GSI3SK"},
}

// TableInput is the table's definition (docs/design.md §2): string keys PK/SK,
// GSI1–GSI3 with projection ALL, on-demand billing, stream NEW_AND_OLD_IMAGES.
func TableInput(name string) *dynamodb.CreateTableInput {
	defs := []types.AttributeDefinition{
		{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
		{AttributeName: aws.String(AttrSK), AttributeType: types.ScalarAttributeTypeS},
	}
	var gsis []types.GlobalSecondaryIndex
	for _, ix := range Indexes {
		defs = append(defs,
			types.AttributeDefinition{AttributeName: aws.String(ix.PK), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String(ix.SK), AttributeType: types.ScalarAttributeTypeS})
		gsis = append(gsis, types.GlobalSecondaryIndex{
			IndexName: aws.String(ix.Name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(ix.PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(ix.SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: defs,
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
		BillingMode:            types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
}

// EnsureTable creates the table if it does not exist, waits until it is
// active, and turns TTL on for the ttl attribute. It is safe to call again.
// It returns the table's latest stream ARN.
func EnsureTable(ctx context.Context, db *dynamodb.Client, name string) (string, error) {
	if err := ensure(ctx, db, TableInput(name)); err != nil {
		return "", err
	}
	return StreamARN(ctx, db, name)
}

// BookkeepingTableInput is the consumers' bookkeeping table: idempotency
// records of side effects and dead letters. Keys PK/SK as the main table,
// on-demand, TTL on ttl, and no stream: bookkeeping costs no stream records
// and wakes no consumer.
func BookkeepingTableInput(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(AttrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
}

// BookkeepingTableName is the default name of a table's bookkeeping table
// (BOOKKEEPING_TABLE_NAME), EffectsTableName that of its effects table
// (EFFECTS_TABLE_NAME, Store.Effects); both are of BookkeepingTableInput's
// shape.
func BookkeepingTableName(table string) string { return table + "-bookkeeping" }

// EffectsTableName: see BookkeepingTableName.
func EffectsTableName(table string) string { return table + "-effects" }

// EnsureBookkeepingTable creates the bookkeeping table if it does not
// exist, waits until it is active and turns TTL on. Safe to call again.
func EnsureBookkeepingTable(ctx context.Context, db *dynamodb.Client, name string) error {
	return ensure(ctx, db, BookkeepingTableInput(name))
}

func ensure(ctx context.Context, db *dynamodb.Client, in *dynamodb.CreateTableInput) error {
	name := aws.ToString(in.TableName)
	_, err := db.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("store: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(db, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 100 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("store: wait for table %s: %w", name, err)
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("store: describe TTL of %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || d.TimeToLiveStatus != types.TimeToLiveStatusEnabled {
		_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(AttrTTL), Enabled: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("store: enable TTL on %s: %w", name, err)
		}
	}
	return nil
}

// StreamARN returns the table's latest stream ARN, or an error if the table
// has no stream.
func StreamARN(ctx context.Context, db *dynamodb.Client, name string) (string, error) {
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("store: describe table %s: %w", name, err)
	}
	if out.Table.LatestStreamArn == nil {
		return "", fmt.Errorf("store: table %s has no stream", name)
	}
	return *out.Table.LatestStreamArn, nil
}

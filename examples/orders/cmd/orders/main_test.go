package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// The local run (make run against DynamoDB Local) creates the orders
// table when it is missing, with the keys and stream the template gives
// it, and finds it the next time; in AWS (no local endpoint) a missing
// table is an error, since the template owns it.
func TestLocalRunCreatesItsTable(t *testing.T) {
	ctx := context.Background()
	db, _ := ddblocal.Clients(ddblocal.Endpoint())
	name := ddblocal.TableName("orders-run")
	t.Cleanup(func() { _, _ = db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	if _, err := ordersStream(ctx, log, db, name, false); err == nil || !strings.Contains(err.Error(), "the orders table") {
		t.Fatalf("a missing table in AWS: %v", err)
	}
	arn, err := ordersStream(ctx, log, db, name, true)
	if err != nil || arn == "" {
		t.Fatalf("created: %q %v", arn, err)
	}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]types.KeyType{}
	for _, k := range desc.Table.KeySchema {
		keys[aws.ToString(k.AttributeName)] = k.KeyType
	}
	if keys["PK"] != types.KeyTypeHash || keys["SK"] != types.KeyTypeRange || len(keys) != 2 ||
		desc.Table.StreamSpecification == nil || desc.Table.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages {
		t.Errorf("the table: keys %v, stream %+v", keys, desc.Table.StreamSpecification)
	}
	again, err := ordersStream(ctx, log, db, name, true)
	if err != nil || again != arn {
		t.Errorf("the second run: %q %v, want the same stream %q", again, err, arn)
	}
}

package ddblocal_test

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
)

// Clients and CreateTable outside a test (in a test, NewTable does both
// and deletes the table afterwards): here against the DynamoDB Local this
// test binary's TestMain started.
func ExampleClients() {
	ctx := context.Background()
	db, streams := ddblocal.Clients(ddblocal.Endpoint())
	in := ddblocal.Schema("PK", "SK")
	in.TableName = aws.String("example-orders")
	in.BillingMode = types.BillingModePayPerRequest // CreateTable takes the input as it is: no stream here
	arn, err := ddblocal.CreateTable(ctx, db, &in)
	if err != nil {
		panic(err)
	}
	defer db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: in.TableName})
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName})
	if err != nil {
		panic(err)
	}
	fmt.Println(*out.Table.TableName, out.Table.TableStatus, arn == "", streams != nil)
	// Output: example-orders ACTIVE true true
}

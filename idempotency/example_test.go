package idempotency_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/idempotency"
)

// exampleTable makes a table on the test binary's DynamoDB Local.
func exampleTable(name string) (*dynamodb.Client, string) {
	db, _ := ddblocal.Clients(ddblocal.Endpoint())
	in := ddblocal.Schema("PK", "SK")
	in.TableName = aws.String(name)
	in.BillingMode = types.BillingModePayPerRequest
	if _, err := ddblocal.CreateTable(context.Background(), db, &in); err != nil {
		panic(err)
	}
	return db, name
}

// A handler's writes and the record's marker in one transaction: the
// second delivery of the record is cancelled on the marker and skipped.
func ExampleGuard_Marker() {
	db, table := exampleTable("example-marker")
	defer db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	g := idempotency.Guard{DB: db, Table: table}
	record := events.DynamoDBEventRecord{EventID: "8e3f…-the-record's-eventID"}

	handle := func(ctx context.Context, r events.DynamoDBEventRecord) error {
		_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Update: &types.Update{TableName: aws.String(table),
				Key: map[string]types.AttributeValue{
					"PK": &types.AttributeValueMemberS{Value: "CUSTOMER#1"}, "SK": &types.AttributeValueMemberS{Value: "TOTALS"}},
				UpdateExpression:          aws.String("ADD orders :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}},
			g.Marker(idempotency.Key(r)), // index 1
		}})
		if idempotency.IsDuplicate(err, 1) {
			fmt.Println("delivered before: skipped")
			return nil
		}
		if err == nil {
			fmt.Println("applied")
		}
		return err
	}
	ctx := context.Background()
	_ = handle(ctx, record)
	_ = handle(ctx, record) // at-least-once: the same record again
	// Output:
	// applied
	// delivered before: skipped
}

// An effect outside DynamoDB, once per record.
func ExampleGuard_Do() {
	db, table := exampleTable("example-do")
	defer db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	g := idempotency.Guard{DB: db, Table: table}
	send := func(context.Context) error { fmt.Println("e-mail sent"); return nil }
	for range 3 {
		if err := g.Do(context.Background(), "welcome#8e3f", send); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// e-mail sent
}

// An effect with a result, once per request: a repeat gets the first
// result back without running the effect; the same key with another
// payload is a reused key, refused.
func ExampleGuard_Once() {
	db, table := exampleTable("example-once")
	defer db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	g := idempotency.Guard{DB: db, Table: table}
	ctx := context.Background()
	charge := func(context.Context) (string, error) { fmt.Println("charged"); return "receipt-0001", nil }
	for range 2 {
		out, err := g.Once(ctx, "order-42#charge", []byte(`{"amount":1250}`), charge)
		fmt.Println(out.Result, out.Repeat, err)
	}
	_, err := g.Once(ctx, "order-42#charge", []byte(`{"amount":9999}`), charge)
	fmt.Println(errors.Is(err, idempotency.ErrPayloadMismatch))
	// Output:
	// charged
	// receipt-0001 false <nil>
	// receipt-0001 true <nil>
	// true
}

package ddblocal_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/ddblocal"
)

func TestMain(m *testing.M) { ddblocal.Main(m) }

// A table with a stream, written to and read back through the stream,
// with the clients the harness configures; gone after the test.
func TestNewTable(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		tbl := ddblocal.NewTable(t, ddblocal.Schema("id", ""))
		name = tbl.Name
		if !strings.HasPrefix(tbl.Name, "testnewtable-inner-") || tbl.StreamARN == "" {
			t.Fatalf("table %q, stream %q", tbl.Name, tbl.StreamARN)
		}
		_, err := tbl.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tbl.Name), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "a"}, "n": &types.AttributeValueMemberN{Value: "1"}}})
		if err != nil {
			t.Fatal(err)
		}
		desc, err := tbl.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(tbl.StreamARN)})
		if err != nil || len(desc.StreamDescription.Shards) == 0 || desc.StreamDescription.StreamViewType != "NEW_AND_OLD_IMAGES" {
			t.Fatalf("%+v %v", desc, err)
		}
	})
	db, _ := ddblocal.Clients(ddblocal.Endpoint())
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}); err == nil {
		t.Fatalf("table %s still exists after its test", name)
	}
}

// The input's own settings are kept; only the name is made unique.
func TestNewTableKeepsTheInput(t *testing.T) {
	in := ddblocal.Schema("PK", "SK")
	in.TableName = aws.String("orders")
	in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}
	a, b := ddblocal.NewTable(t, in), ddblocal.NewTable(t, in)
	if a.Name == b.Name || !regexp.MustCompile(`^orders-\d+-\d+$`).MatchString(a.Name) {
		t.Fatalf("names %q, %q", a.Name, b.Name)
	}
	out, err := a.DB.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(a.Name)})
	if err != nil || out.Table.StreamSpecification.StreamViewType != types.StreamViewTypeKeysOnly || len(out.Table.KeySchema) != 2 {
		t.Fatalf("%+v %v", out.Table, err)
	}
}

// The Makefile installs the version the harness names in its hint.
func TestVersionMatchesTheMakefile(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "DDB_LOCAL_VERSION := "+ddblocal.Version+"\n") {
		t.Fatalf("the Makefile's DDB_LOCAL_VERSION is not %s", ddblocal.Version)
	}
}

package ddblocal_test

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
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
// A process set up without a limiter (Main) is told so when it asks for
// one, rather than handed DynamoDB Local unlimited.
func TestSetupLimitedAfterSetupIsRefused(t *testing.T) {
	if _, err := ddblocal.SetupLimited(context.Background(), ddblocal.Limits{Scale: 0.01}); err == nil || !strings.Contains(err.Error(), "no limiter") {
		t.Fatalf("SetupLimited after Setup: %v, want an error saying there is no limiter", err)
	}
	if ddblocal.Limited() != nil {
		t.Fatal("Limited() is not nil after Setup")
	}
}

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

// DynamoDB Local listens on 127.0.0.1 only (its own server would take
// every interface: anyone on the network could read and write the
// tables), and answers no web page's cross-origin request (its own
// default allows any origin).
func TestStartListensOnLoopbackOnly(t *testing.T) {
	s, err := ddblocal.Start(context.Background(), ddblocal.Options{QuickStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !s.Loopback {
		t.Fatalf("not on loopback only: %s", s.NotLoopback)
	}
	port := strconv.Itoa(s.Port)
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err != nil {
		t.Fatalf("127.0.0.1: %v", err)
	} else {
		c.Close()
	}
	// Any address but 127.0.0.1 is refused: another loopback address and
	// IPv6's stand for the other interfaces (a wildcard bind takes them
	// all), without sending anything off this machine.
	for _, addr := range []string{"127.0.0.2:" + port, "[::1]:" + port} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Errorf("%s accepted a connection: DynamoDB Local listens beyond 127.0.0.1", addr)
		}
	}
	req, _ := http.NewRequest(http.MethodOptions, s.Endpoint, nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type,x-amz-target,authorization")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("a web page's preflight is allowed: Access-Control-Allow-Origin %q", got)
	}
	// And it is DynamoDB Local all the same.
	db := dynamodb.New(dynamodb.Options{BaseEndpoint: aws.String(s.Endpoint), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	if _, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
}

package filter_test

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/stream/filter"
)

// One Go value is the filter: its JSON is the template's FilterCriteria,
// and Match is what the mapping does with each record.
func Example() {
	orders := filter.MustCriteria(
		`{"dynamodb":{"NewImage":{"itemType":{"S":["Order"]},"status":{"S":[{"anything-but":["DRAFT"]}]}}}}`,
		`{"dynamodb":{"OldImage":{"itemType":{"S":["Order"]}},"NewImage":{"PK":{"S":[{"exists":false}]}}}}`,
	)
	fc, _ := json.Marshal(orders)
	fmt.Println(string(fc))

	placed := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		NewImage: map[string]events.DynamoDBAttributeValue{
			"PK": events.NewStringAttribute("ORDER#1"), "itemType": events.NewStringAttribute("Order"), "status": events.NewStringAttribute("PLACED"),
		}}}
	draft := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		NewImage: map[string]events.DynamoDBAttributeValue{
			"PK": events.NewStringAttribute("ORDER#2"), "itemType": events.NewStringAttribute("Order"), "status": events.NewStringAttribute("DRAFT"),
		}}}
	deleted := events.DynamoDBEventRecord{EventName: "REMOVE", Change: events.DynamoDBStreamRecord{
		OldImage: draft.Change.NewImage}}
	fmt.Println(orders.Match(placed), orders.Match(draft), orders.Match(deleted))
	// Output:
	// {"Filters":[{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"itemType\":{\"S\":[\"Order\"]},\"status\":{\"S\":[{\"anything-but\":[\"DRAFT\"]}]}}}}"},{"Pattern":"{\"dynamodb\":{\"OldImage\":{\"itemType\":{\"S\":[\"Order\"]}},\"NewImage\":{\"PK\":{\"S\":[{\"exists\":false}]}}}}"}]}
	// true false true
}

// Parse names what is wrong and where, before a deploy does; by default
// it takes only what Lambda documents for a DynamoDB mapping.
func ExampleParse() {
	_, err := filter.Parse(`{"dynamodb":{"NewImage":{"status":{"S":[{"anything-but":"DRAFT"}]}}}}`)
	fmt.Println(err)
	_, err = filter.Parse(`{"dynamodb":{"NewImage":{"file":{"S":[{"wildcard":"*.png"}]}}}}`)
	fmt.Println(err)
	_, err = filter.EventBridge.Parse(`{"dynamodb":{"NewImage":{"file":{"S":[{"wildcard":"*.png"}]}}}}`)
	fmt.Println(err)
	// Output:
	// filter: dynamodb.NewImage.status.S: anything-but: a single value (write ["DRAFT"]) is not in Lambda's filter rule syntax (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax); for an EventBridge rule or a Pipe, parse with filter.EventBridge
	// filter: dynamodb.NewImage.file.S: wildcard: wildcard is not in Lambda's filter rule syntax (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax); for an EventBridge rule or a Pipe, parse with filter.EventBridge
	// <nil>
}

// AWS's own Boolean example names "dynamodb" twice: the record must match
// both, as the deployed mapping reads it.
func ExampleParse_repeatedKey() {
	p := filter.MustParse(`{"dynamodb":{"NewImage":{"AccountManager":{"S":["Pat Candella"]}}},"dynamodb":{"OldImage":{"AccountManager":{"S":["Terry Whitlock"]}}}}`)
	manager := func(name string) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{"AccountManager": events.NewStringAttribute(name)}
	}
	modify := func(from, to string) events.DynamoDBEventRecord {
		return events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{OldImage: manager(from), NewImage: manager(to)}}
	}
	fmt.Println(p.Match(modify("Terry Whitlock", "Pat Candella")), p.Match(modify("Terry Whitlock", "Shirley Rodriguez")))
	// Output:
	// true false
}

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

// Parse names what is wrong and where, before a deploy does.
func ExampleParse() {
	_, err := filter.Parse(`{"dynamodb":{"NewImage":{"n":{"N":[{"numeric":["<",5,">",1]}]}}}}`)
	fmt.Println(err)
	// Output:
	// filter: dynamodb.NewImage.n.N: numeric: operator "<" out of place (a range is a lower bound > or >= first, then an upper < or <=)
}

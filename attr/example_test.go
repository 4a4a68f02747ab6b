package attr_test

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/dynastream/dynastream/attr"
)

func ExampleFromLambdaMap() {
	// A NewImage as a Lambda DynamoDB stream event delivers it.
	var image map[string]events.DynamoDBAttributeValue
	err := json.Unmarshal([]byte(`{
		"PK": {"S": "ROOM#r1"},
		"SK": {"S": "ROOM"},
		"itemType": {"S": "room"},
		"name": {"S": "Flat hunt Berlin"},
		"memberCount": {"N": "3"},
		"budget": {"N": "1450.50"},
		"features": {"SS": ["balcony", "elevator"]},
		"context": {"M": {"combineMode": {"S": "mixed"}, "owners": {"L": [{"S": "USER#u1"}]}}}
	}`), &image)
	if err != nil {
		panic(err)
	}

	item, err := attr.FromLambdaMap(image)
	if err != nil {
		panic(err)
	}

	var room struct {
		PK          string   `dynamodbav:"PK"`
		SK          string   `dynamodbav:"SK"`
		ItemType    string   `dynamodbav:"itemType"`
		Name        string   `dynamodbav:"name"`
		MemberCount int      `dynamodbav:"memberCount"`
		Budget      string   `dynamodbav:"budget"` // a number kept in its exact string form
		Features    []string `dynamodbav:"features,stringset"`
		Context     struct {
			CombineMode string   `dynamodbav:"combineMode"`
			Owners      []string `dynamodbav:"owners"`
		} `dynamodbav:"context"`
	}
	if err := attributevalue.UnmarshalMap(item, &room); err != nil {
		panic(err)
	}
	fmt.Printf("%s %s %s %q members=%d budget=%s features=%v mode=%s owners=%v\n",
		room.PK, room.SK, room.ItemType, room.Name, room.MemberCount, room.Budget,
		room.Features, room.Context.CombineMode, room.Context.Owners)
	// Output: ROOM#r1 ROOM room "Flat hunt Berlin" members=3 budget=1450.50 features=[balcony elevator] mode=mixed owners=[USER#u1]
}

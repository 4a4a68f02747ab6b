// Package attr is the one place in this project that converts DynamoDB
// attribute values and stream records between the three Go shapes they come
// in:
//
//   - github.com/aws/aws-lambda-go/events: events.DynamoDBAttributeValue and
//     events.DynamoDBEventRecord, the shape a Lambda function receives from a
//     DynamoDB stream event source mapping;
//   - github.com/aws/aws-sdk-go-v2/service/dynamodb/types: the AttributeValue
//     union the DynamoDB client reads and writes, and the shape the rest of the
//     project (and the attributevalue marshaler) works with;
//   - github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types: the
//     AttributeValue union and Record returned by the DynamoDB Streams client,
//     used when polling a stream directly (for example DynamoDB Local, which has
//     no Lambda trigger).
//
// The SDK dynamodb shape is the hub: FromLambda/ToLambda and
// FromStreams/ToStreams convert single values, the ...Map variants convert
// whole items, and LambdaRecord turns a polled stream record into the record a
// Lambda handler would have received, so one handler serves both paths.
//
// All ten attribute types (S, N, B, BOOL, NULL, M, L, SS, NS, BS) convert
// losslessly and recursively. Numbers stay in their decimal string form and
// are never parsed. nil maps, lists and sets convert to nil, empty ones to
// empty ones, so values round-trip exactly.
//
// Conversions run on every stream record, so they are allocation-light: there
// is no JSON round trip, and leaf data is shared rather than copied. The byte
// slices of B and BS values and the string slices of SS and NS values in the
// result alias those of the input; copy them before mutating either side.
//
// A nil attribute value, a typed-nil union member, an unknown union member
// (types.UnknownUnionMember) or a zero events.DynamoDBAttributeValue yields an
// error naming the attribute path, e.g.
//
//	attr: "settings.mods[2]": nil attribute value
//
// Stability: v0. The exported API may still change in a minor release;
// every change is listed in CHANGELOG.md, with what to do about it.
package attr

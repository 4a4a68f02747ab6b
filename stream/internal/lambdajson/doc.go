// Package lambdajson decodes the payload Lambda hands a DynamoDB stream
// consumer into aws-lambda-go's event types in one pass over its tokens
// (Decode), with exactly the result of json.Unmarshal into an
// events.DynamoDBEvent: the same event for every payload that accepts, an
// error for every payload it rejects. stream.LambdaHandler uses it; its
// tests compare it with aws-lambda-go on every fixture, on generated
// payloads and under fuzzing (FuzzDecodeEvent). DecodeChange reads the
// data of a Kinesis record a table wrote (one change) the same way, with
// exactly the result of json.Unmarshal into the struct stream read it with
// before (FuzzDecodeChange).
//
// It is internal to the stream module: a decoder, not an API.
package lambdajson

package app

// Stream sources: STREAM_SOURCE, which a consumer's Runner reads
// (source_local.go; a Lambda function's mapping reads for it).
const (
	SourceDynamoDB = "dynamodb" // the table's DynamoDB stream (the default)
	SourceKinesis  = "kinesis"  // the Kinesis data stream the table writes to
)

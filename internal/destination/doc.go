// Package destination is, for the local stack, what DynamoDB's Kinesis
// Data Streams destination is on AWS ("Change data capture for Kinesis
// Data Streams with DynamoDB", DynamoDB Developer Guide): DynamoDB Local
// has none, so Kinesis, a stream.Handler on the table's DynamoDB stream,
// puts each change into a Kinesis data stream (moto_server's, locally) in
// the record format AWS writes: the change as JSON, its time in
// microseconds (ApproximateCreationDateTimePrecision MICROSECOND), the
// item's key as the partition key.
//
// AWS says that on this source one item's records may appear in another
// order than its changes, and more than once. Kinesis makes both happen
// under a seed (Repeat, Reorder), so that the consumers reading the
// Kinesis stream meet them locally, and counts what it injected.
//
// Entries is the pure part: a batch of changes in, the records to put out.
//
// Delivery: at least once, as its Runner delivers the table's stream; a
// batch put again (a retry, a restart) is put again whole: more repeats,
// which the consumers must bear anyway.
package destination

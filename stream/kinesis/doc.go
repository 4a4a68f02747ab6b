// Package kinesis reads a Kinesis data stream that a DynamoDB table writes
// its changes to ("Change data capture for Kinesis Data Streams with
// DynamoDB", DynamoDB Developer Guide) through the interface a
// stream.Runner reads a DynamoDB stream with: Source is a stream.API. The
// Runner, its handlers, filters, lanes, checkpoints, record age and dead
// letters stay as they are; only the records' source changes.
//
// What Source does for each call of the Runner:
//
//   - DescribeStream lists the stream's shards with ListShards (every
//     page), each with its parent, so that the Runner reads a parent
//     before its children after a split.
//   - GetShardIterator and GetRecords pass through to Kinesis; each
//     record's data, the change as DynamoDB wrote it, becomes the stream
//     record the Runner reads (stream.KinesisChange): the same eventID and
//     images, the Kinesis record's sequence number, and the change's time
//     to the millisecond or microsecond it came with.
//   - Kinesis's errors become DynamoDB Streams' where the Runner acts on
//     them: an expired iterator (renewed), a shard or stream not found, a
//     read over the shard's limits (LimitExceededException: the Runner
//     waits and reads again).
//
// Delivery guarantees are Kinesis's, weaker than DynamoDB Streams': the
// Runner still hands a shard's records over in the shard's order and
// checkpoints after them, but one item's records may be in another order
// than its writes, and repeated (the page above). A handler must not
// assume one item's order: check it with replay.KinesisSchedules. A record
// whose data is not a DynamoDB change (another producer's, or cut short)
// is not dropped: it reaches the Runner unreadable, and the Runner
// dead-letters it with its bytes, then moves on.
//
// Criteria reads the filter patterns of a Lambda mapping on such a stream
// ({"data": {"dynamodb": …}}) as the patterns of the change, the filter
// the Runner takes.
//
// A child of two merged shards is read after both (its ParentShardId and
// AdjacentParentShardId: stream.MarkAdjacentParent), a split's children
// after their parent.
//
// Not here yet: enhanced fan-out (SubscribeToShard).
package kinesis

// Package notify is the notifier's stream handler: it turns each change
// into domain events (internal/events) and hands them to a Publisher — the
// local outbox or EventBridge — carries out the collaboration side effects
// (Effects: e-mails and in-app notifications) and pushes each new chat
// message to its room's WebSocket connections (Chat), reporting the
// records whose events or effects failed as batch item failures, so
// nothing is lost.
//
// Scheduling is stream.Keyed's: records are grouped by partition key and the
// groups run concurrently, each in stream order and stopped at its first
// failure. The reads the side effects need are made once per batch, the
// in-app notifications written in shared batch writes, and the events
// published in shared calls as the groups go, each key's in stream order
// (a record's events wait for its own step, not for the batch's slowest
// group). Events of one key may reach
// EventBridge out of order after a retry (EventBridge keeps no order
// anyway): their envelope's sequenceNumber orders them on a DynamoDB
// stream, its changedAt on a Kinesis data stream for DynamoDB.
//
// Delivery: events at least once — their ids come from the record's
// eventID, so a redelivered record republishes the same ids and consumers
// dedupe; e-mails once per (source change, recipient), guarded by
// idempotency records in the effects table (see Effects): a crash delays
// an e-mail (by the claim's 30 s hold at most) and never loses it; it goes
// out twice only when the crash falls between the send and its completion
// record. Chat pushes at least once: a message whose push to one
// connection fails past the client's retries fails its record, and the
// retry pushes it to the whole room again with the same messageId, which
// clients use to drop duplicates; a connection API Gateway says is gone is
// deleted. A search room's chat messages go only to its current members'
// connections (read when the push begins), and a member's removal or the
// room's deletion closes the connections that lost access (again on a
// redelivery: what is closed already is gone, and only its item is
// deleted). Records that can never be handled are dead-lettered at once
// (Notifier.DeadLetters).
package notify

// Command notifier turns the table's stream into side effects: the domain
// events of the catalogue (docs/events.md) — to EventBridge in AWS, to the
// local outbox (LOCAL_DIR/outbox/events.jsonl) on the local stack — and the
// collaboration e-mails and in-app notifications. E-mails go through SES v2
// in AWS and to .eml files in LOCAL_DIR/outbox/mail on the local stack.
//
// Environment (besides the common DYNAMODB_* and LOG_LEVEL): EVENT_BUS_NAME
// (the bus; required in Lambda, and setting it locally publishes to
// EventBridge too), EVENTBRIDGE_ENDPOINT and EVENTBRIDGE_MAX_BYTES
// (optional), MAIL_FROM (the sender; required in Lambda),
// SES_CONFIGURATION_SET (optional), APP_BASE_URL (links in e-mails; default
// http://localhost:8080).
package main

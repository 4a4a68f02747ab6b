// Command writer serves the HTTP API that writes the table's core items. In
// Lambda it sits behind API Gateway's HTTP API with a JWT authorizer;
// locally it is a net/http server that verifies HS256 dev tokens and mints
// them at POST /dev/tokens.
//
// Locally every request passes devguard first: its Host must be this
// machine's loopback on the writer's port (or one of
// WRITER_ALLOWED_HOSTS), a cross-site browser request that changes
// something is refused, and POST /dev/tokens takes JSON only; the
// management endpoint verifies SigV4 signatures made with
// CHAT_PUSH_SECRET, as API Gateway verifies its callers'.
//
// Environment: DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT (empty = AWS),
// AWS_REGION, WRITER_ADDR (default 127.0.0.1:8080), WRITER_ALLOWED_HOSTS,
// DEV_AUTH_SECRET and CHAT_PUSH_SECRET (required outside Lambda),
// LOG_LEVEL.
package main

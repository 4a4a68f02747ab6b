// Command writer serves the HTTP API that writes the table's core items. In
// Lambda it sits behind API Gateway's HTTP API with a JWT authorizer;
// locally it is a net/http server that verifies HS256 dev tokens and mints
// them at POST /dev/tokens.
//
// Environment: DYNAMODB_TABLE_NAME, DYNAMODB_ENDPOINT (empty = AWS),
// AWS_REGION, WRITER_ADDR (default :8080), DEV_AUTH_SECRET (required
// outside Lambda), LOG_LEVEL.
package main

// Package auth tells who is calling. In Lambda, API Gateway's JWT authorizer
// has already verified an HTTP request's token and the claims come with the
// request (APIGateway); on the local stack the writer verifies HS256 dev
// tokens itself (DevTokens, which also mints them for the README's
// walkthrough). The WebSocket API has no authorizer: its $connect passes the
// raw token to a Verifier — Cognito's keys (Cognito, JWKS fetched once and
// cached) in AWS, the dev tokens locally. Either way handlers see an
// Identity.
package auth

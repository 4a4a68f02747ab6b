// Package auth tells who is calling. In Lambda, API Gateway's JWT authorizer
// has already verified the token and the claims come with the request; on
// the local stack the writer verifies HS256 dev tokens itself (and mints them
// for the README's walkthrough). Either way handlers see an Identity.
package auth

// Package gatewaytest gives tests API Gateway WebSocket events of the real
// service's shapes (internal/gateway/testdata), with their placeholders
// filled in. It is for tests only.
package gatewaytest

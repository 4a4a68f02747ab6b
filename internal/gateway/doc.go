// Package gateway carries a WebSocket API's traffic to its routes, the same
// way on API Gateway and on a laptop.
//
// Routes is what a WebSocket API does: admit or refuse a connection
// ($connect), forget it ($disconnect), and answer a client's frame (every
// other route; the frame's action says which). Two transports call it:
//
//   - Lambda adapts API Gateway WebSocket events
//     (events.APIGatewayWebsocketProxyRequest) to Routes. A refused $connect
//     answers its status, so API Gateway refuses the upgrade; a frame's
//     reply is the integration response, which API Gateway sends back to the
//     client when the route has a route response.
//   - Local serves the same routes over real WebSocket connections
//     (github.com/coder/websocket), and implements API Gateway's management
//     endpoint, POST/GET/DELETE /@connections/{connectionId} with 410 Gone
//     for an unknown connection, so a program that pushes to clients uses
//     the real apigatewaymanagementapi client in both modes; only the
//     endpoint differs.
//
// Delivery: a frame a client sends is handled at most once (a connection
// that drops mid-frame loses it, as on API Gateway); a push is delivered
// once to a connection that is open, and refused with 410 when it is not.
// Pushes to one connection keep their order. Locally a connection admitted
// by $connect but not yet upgraded queues its pushes, so a push that races
// the handshake is not mistaken for a gone connection.
package gateway

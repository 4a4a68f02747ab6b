// Package chat is the chat of seed 002: connections, rooms and messages,
// the frames clients and the server exchange over a WebSocket, and the
// rules a message's content keeps to. It is pure: the writer stores what
// it validates here, and the notifier broadcasts stored messages.
//
// Delivery: a message is stored once (its id comes from the writer) and
// pushed to each connection of its room at least once — a retried stream
// batch may push it again — so a client drops a messageId it has seen.
package chat

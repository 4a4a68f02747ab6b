// Command chat is a small terminal client for the chat's WebSocket API
// (seed 002), locally or on API Gateway:
//
//	go run ./cmd/chat -token $ALICE -room global
//	go run ./cmd/chat -url wss://<api id>.execute-api.<region>.amazonaws.com/<stage> -token $ID_TOKEN
//
// Each line typed is sent as a message; "/join <room>" moves to another
// room; "/quit" (or end of input) closes; "/help" lists the commands, and
// a line starting "//" sends one that starts with "/". Commands are
// answered by the client and never sent. Every frame the server sends is
// printed: messages of the room (each once: a message id seen before is
// dropped, as delivery is at least once), and the answers to what you
// sent. Text is printed as its author wrote it, control characters shown
// escaped. When the server closes the connection (a member removed from
// the room, the room deleted, the server stopping), the client says so at
// once, with the close frame's status and reason, and exits with status 1.
package main

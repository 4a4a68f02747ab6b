// Command devstack runs the whole pipeline on the local stack (`make run`):
// DynamoDB Local, the table created from the code's schema, and the writer,
// projector and notifier binaries from ./bin, wired to it. Ctrl-C stops the
// programs (SIGTERM, then SIGKILL after 5 s) and then DynamoDB Local; every
// child also dies with devstack (Pdeathsig, on Linux), so nothing is left running.
//
// Environment: DYNAMODB_TABLE_NAME (default search-room), DYNAMODB_LOCAL_PORT
// (default 8000), WRITER_ADDR (default 127.0.0.1:8080), BIN_DIR (default bin),
// LOCAL_DIR (default .local), plus anything the programs read (STREAM_*,
// LOG_LEVEL), which is passed through.
package main

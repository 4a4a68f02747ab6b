// Package runtimeapi runs Lambda bootstraps as Lambda does, for tests: a
// Server implements the Lambda runtime API (2018-06-01: invocation/next,
// …/response, …/error and init/error, with request ids, deadlines and the
// function ARN header), and Start runs a built binary against it,
// configured only through its environment, as a function's execution
// environment would.
//
// What it adds to the real service, for measurement: the time from process
// start to the first `next` (init), the process's resident memory, and its
// log lines. What it does as Lambda does: an invocation answered neither
// by its deadline nor before the process exits is a timeout or an exit
// error, and the process is then killed (a new environment would start).
// It does not emulate concurrency within one environment (one invocation
// at a time, as Lambda's default), nor the Extensions or Telemetry APIs.
//
// References: https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html
package runtimeapi

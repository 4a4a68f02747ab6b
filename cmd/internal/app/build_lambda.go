//go:build lambda.norpc

package app

// LambdaBuild is true in the bootstraps `make package` builds (with the
// tag lambda.norpc): they run only under Lambda, and the compiler drops
// the local mode (stream runner, HTTP server, dev tokens) from them.
const LambdaBuild = true

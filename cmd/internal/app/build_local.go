//go:build !lambda.norpc

package app

// LambdaBuild is false in ordinary builds: they run locally, or under
// Lambda when AWS_LAMBDA_RUNTIME_API is set.
const LambdaBuild = false

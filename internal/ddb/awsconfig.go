//go:build !lambda.norpc

package ddb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// lambdaBuild: see loadAWS.
const lambdaBuild = false

// loadAWS is the SDK's whole default chain (environment, shared files,
// SSO, web identity, container and instance credentials): programs built
// without lambda.norpc may run anywhere. The chain resolves credentials
// only when a request needs them, so a local stack without any runs.
func loadAWS(ctx context.Context, region string, _ bool, retryer func() aws.Retryer) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithRetryer(retryer)}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}

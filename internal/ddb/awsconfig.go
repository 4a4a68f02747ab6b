//go:build !lambda.norpc

package ddb

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// lambdaBuild: see loadAWS.
const lambdaBuild = false

// loadAWS is the SDK's whole default chain (environment, shared files,
// SSO, web identity, container and instance credentials): programs built
// without lambda.norpc may run anywhere. local uses fixed credentials, so
// a real profile is never picked up for DynamoDB Local.
func loadAWS(ctx context.Context, region string, local bool, retryer func() aws.Retryer) (aws.Config, error) {
	opts := []func(*config.LoadOptions) error{config.WithRetryer(retryer)}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if local {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}

//go:build lambda.norpc

package ddb

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// lambdaBuild: see loadAWS.
const lambdaBuild = true

// loadAWS, in a Lambda build (`make package` builds with lambda.norpc),
// reads only what Lambda gives a function: the region and the execution
// role's credentials in the environment (AWS_REGION, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), and the endpoints the SDK's
// own chain would read (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>). The
// SDK's config package, with its shared files, SSO, STS and instance
// metadata clients, is 1.7 MB of a bootstrap and nothing a function uses.
func loadAWS(_ context.Context, region string, local bool, retryer func() aws.Retryer) (aws.Config, error) {
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	cfg := aws.Config{Region: region, Retryer: retryer, ConfigSources: []any{envEndpoints{}}}
	if v := os.Getenv("AWS_ENDPOINT_URL"); v != "" {
		cfg.BaseEndpoint = aws.String(v)
	}
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	switch {
	case id != "" && secret != "":
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, os.Getenv("AWS_SESSION_TOKEN")))
	case !local: // (DynamoDB Local's clients sign with fixed credentials)
		return cfg, errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the execution role; this build reads credentials from nowhere else)")
	}
	if cfg.Region == "" {
		return cfg, errors.New("AWS_REGION is not set (Lambda sets it)")
	}
	return cfg, nil
}

// envEndpoints gives a service client its AWS_ENDPOINT_URL_<SERVICE>, the
// SDK's service id upper-cased with spaces as underscores (e.g.
// AWS_ENDPOINT_URL_SESV2, AWS_ENDPOINT_URL_EVENTBRIDGE), as the SDK's
// config package does. The clients look for this method on the config's
// sources.
type envEndpoints struct{}

func (envEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v := os.Getenv("AWS_ENDPOINT_URL_" + strings.ToUpper(strings.ReplaceAll(sdkID, " ", "_")))
	return v, v != "", nil
}

package ddb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
)

// Config says where DynamoDB is.
type Config struct {
	// Endpoint is a local endpoint such as http://127.0.0.1:8000; empty means AWS.
	Endpoint string
	// Region defaults to us-east-1 for a local endpoint.
	Region string
	// MaxAttempts bounds the SDK's retries of throttled and 5xx calls (default 5).
	MaxAttempts int
}

// Clients are the two clients every program needs.
type Clients struct {
	DB      *dynamodb.Client
	Streams *dynamodbstreams.Client
	AWS     aws.Config
	// Requests counts DB's requests, StreamRequests those of Streams.
	Requests, StreamRequests *Counter

	conf Config
}

// Local reports whether the config points at a local endpoint.
func (c Config) Local() bool { return c.Endpoint != "" }

// New builds the clients.
func New(ctx context.Context, c Config) (*Clients, error) {
	var opts []func(*config.LoadOptions) error
	region := c.Region
	if region == "" && c.Local() {
		region = "us-east-1"
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = 5
	}
	opts = append(opts, config.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts })
	}))
	if c.Local() {
		// DynamoDB Local accepts any credentials; never pick up a real profile.
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("ddb: load AWS config: %w", err)
	}
	out := &Clients{AWS: cfg, Requests: &Counter{}, StreamRequests: &Counter{}, conf: c}
	out.DB = out.NewDB(out.Requests)
	out.Streams = dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if c.Local() {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.APIOptions = append(o.APIOptions, out.StreamRequests.Middleware)
	})
	return out, nil
}

// NewDB returns another DynamoDB client on the same configuration whose
// requests count in counter (nil: not counted): e.g. for a consumer's
// checkpoint table, so its bookkeeping is counted apart from its data.
func (c *Clients) NewDB(counter *Counter) *dynamodb.Client {
	return dynamodb.NewFromConfig(c.AWS, func(o *dynamodb.Options) {
		if c.conf.Local() {
			o.BaseEndpoint = aws.String(c.conf.Endpoint)
			o.DisableValidateResponseChecksum = true
		}
		if counter != nil {
			o.APIOptions = append(o.APIOptions, counter.Middleware)
		}
	})
}

package ddb

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"
)

// Config says where DynamoDB is.
type Config struct {
	// Endpoint is a local endpoint such as http://127.0.0.1:8000; empty means AWS.
	Endpoint string
	// Region defaults to us-east-1 for a local endpoint.
	Region string
	// MaxAttempts bounds the attempts of a call that fails transiently
	// (default DefaultMaxAttempts; see NewRetryer).
	MaxAttempts int
	// Faults, when set, fails a share of the DynamoDB and Streams clients'
	// requests (tests of the failure behaviour; never in production).
	Faults *Faults
	// OwnWrites makes the DynamoDB clients recognise a conditional put or
	// a transaction that finds exactly what it writes already written as
	// done (ownPut): for a writer whose ids and times make every write its
	// own (the writer's requests), never for a consumer, whose markers
	// must tell a duplicate from a first delivery.
	OwnWrites bool
	// Capacity makes the DynamoDB clients' counters ask for and sum the
	// capacity units each call consumed (Counter.Capacity), and the data
	// client's by partition key too (Counter.ByKey): for the load
	// benchmark (DYNAMODB_CAPACITY=true).
	Capacity bool
	// Indexes are the table's global secondary indexes, with which
	// Capacity prices transactions and names index keys.
	Indexes []Index
	// APIOptions are added to every client's middleware (aws.Config's
	// APIOptions, so the clients other services build on Clients.AWS get
	// them too): the tests add replay.APIOption, so that the replay kit
	// can crash a handler between two of its requests.
	APIOptions []func(*middleware.Stack) error
}

// Clients are the two clients every program needs.
type Clients struct {
	DB *dynamodb.Client
	// Streams is nil in a Lambda build (a function gets its records in
	// the event).
	Streams *dynamodbstreams.Client
	AWS     aws.Config
	// Requests counts DB's requests, StreamRequests those of Streams.
	Requests, StreamRequests *Counter

	conf Config
}

// localCredentials sign the requests to DynamoDB Local, which accepts any:
// a real profile is never picked up for it. Only the DynamoDB clients use
// them; the clients of other services (SES, EventBridge) built on
// Clients.AWS keep the real chain's.
var localCredentials = credentials.NewStaticCredentialsProvider("local", "local", "")

// Local reports whether the config points at a local endpoint.
func (c Config) Local() bool { return c.Endpoint != "" }

// New builds the clients.
func New(ctx context.Context, c Config) (*Clients, error) {
	region := c.Region
	if region == "" && c.Local() {
		region = "us-east-1"
	}
	cfg, err := loadAWS(ctx, region, c.Local(), func() aws.Retryer { return NewRetryer(c.MaxAttempts) })
	if err != nil {
		return nil, fmt.Errorf("ddb: load AWS config: %w", err)
	}
	cfg.APIOptions = append(cfg.APIOptions, c.APIOptions...)
	if c.Local() && os.Getenv("AWS_ACCESS_KEY_ID") == "" && os.Getenv("AWS_PROFILE") == "" {
		// A local stack without credentials of its own: the other
		// services' clients (SES, EventBridge and the chat's management
		// endpoint, local fakes) sign with the fixed ones too, rather than
		// probing for instance credentials. Lambda sets AWS_ACCESS_KEY_ID.
		cfg.Credentials = localCredentials
	}
	out := &Clients{AWS: cfg, Requests: &Counter{Capacity: c.Capacity, ByKey: c.Capacity, Indexes: c.Indexes}, StreamRequests: &Counter{}, conf: c}
	out.DB = out.NewDB(out.Requests)
	if !lambdaBuild { // a function gets its records in the event
		out.Streams = dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
			if c.Local() {
				o.BaseEndpoint = aws.String(c.Endpoint)
				o.Credentials = localCredentials
			}
			if c.Faults != nil {
				o.HTTPClient = &http.Client{Transport: c.Faults}
			}
			o.APIOptions = append(o.APIOptions, out.StreamRequests.Middleware)
		})
	}
	return out, nil
}

// Faults returns the fault injector of the configuration (nil without).
func (c *Clients) Faults() *Faults { return c.conf.Faults }

// NewDB returns another DynamoDB client on the same configuration whose
// requests count in counter (nil: not counted): e.g. for a consumer's
// checkpoint table, so its bookkeeping is counted apart from its data.
func (c *Clients) NewDB(counter *Counter) *dynamodb.Client {
	return dynamodb.NewFromConfig(c.AWS, func(o *dynamodb.Options) {
		if c.conf.Local() {
			o.BaseEndpoint = aws.String(c.conf.Endpoint)
			o.DisableValidateResponseChecksum = true
			o.Credentials = localCredentials
		}
		if c.conf.OwnWrites {
			o.APIOptions = append(o.APIOptions, ownPut)
		}
		if counter != nil {
			o.APIOptions = append(o.APIOptions, counter.Middleware)
		}
		if c.conf.Faults != nil {
			o.HTTPClient = &http.Client{Transport: c.conf.Faults}
		}
	})
}

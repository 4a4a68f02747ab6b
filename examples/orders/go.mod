module github.com/dynastream/dynastream/examples/orders

go 1.26.0

require (
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.47.6
	github.com/aws/aws-sdk-go-v2/config v1.33.14
	github.com/aws/aws-sdk-go-v2/credentials v1.20.14
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.73.0
	github.com/aws/aws-sdk-go-v2/service/dynamodbstreams v1.46.5
	github.com/aws/aws-sdk-go-v2/service/kinesis v1.56.10
	github.com/dynastream/dynastream/consumer v0.1.0
	github.com/dynastream/dynastream/ddblocal v0.1.0
	github.com/dynastream/dynastream/idempotency v0.1.0
	github.com/dynastream/dynastream/replay v0.1.0
	github.com/dynastream/dynastream/stream v0.1.0
)

require (
	github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream v1.7.26 // indirect
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue v1.21.18 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.6 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.24 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.12.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.51.7 // indirect
	github.com/aws/smithy-go v1.28.8 // indirect
	github.com/dynastream/dynastream/attr v0.1.0 // indirect
	github.com/dynastream/dynastream/awserr v0.1.0 // indirect
	github.com/dynastream/dynastream/emf v0.1.0 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
)

// Until the library is published, a module of your own points at a clone
// the same way: one line per library module in its build, the ones the
// modules you import need (attr, emf) and their tests need (ddblocal)
// included.
replace (
	github.com/dynastream/dynastream/attr => ../../attr
	github.com/dynastream/dynastream/awserr => ../../awserr
	github.com/dynastream/dynastream/consumer => ../../consumer
	github.com/dynastream/dynastream/ddblocal => ../../ddblocal
	github.com/dynastream/dynastream/emf => ../../emf
	github.com/dynastream/dynastream/idempotency => ../../idempotency
	github.com/dynastream/dynastream/replay => ../../replay
	github.com/dynastream/dynastream/stream => ../../stream
)

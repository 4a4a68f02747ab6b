module github.com/dynastream/dynastream

go 1.26.8

require (
	github.com/MicahParks/keyfunc/v3 v3.9.0
	github.com/aws/aws-lambda-go v1.55.1
	github.com/aws/aws-sdk-go-v2 v1.47.6
	github.com/aws/aws-sdk-go-v2/config v1.33.14
	github.com/aws/aws-sdk-go-v2/credentials v1.20.14
	github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue v1.21.18
	github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi v1.38.0
	github.com/aws/aws-sdk-go-v2/service/cloudformation v1.82.4
	github.com/aws/aws-sdk-go-v2/service/dynamodb v1.73.0
	github.com/aws/aws-sdk-go-v2/service/dynamodbstreams v1.46.5
	github.com/aws/aws-sdk-go-v2/service/kinesis v1.56.10
	github.com/aws/aws-sdk-go-v2/service/lambda v1.114.1
	github.com/aws/aws-sdk-go-v2/service/sesv2 v1.79.6
	github.com/aws/aws-sdk-go-v2/service/sqs v1.52.9
	github.com/aws/smithy-go v1.28.8
	github.com/awslabs/aws-lambda-go-api-proxy v0.16.2
	github.com/awslabs/goformation/v7 v7.14.9
	github.com/coder/websocket v1.8.15
	github.com/dynastream/dynastream/attr v0.1.0
	github.com/dynastream/dynastream/awserr v0.1.0
	github.com/dynastream/dynastream/consumer v0.1.0
	github.com/dynastream/dynastream/ddblocal v0.1.0
	github.com/dynastream/dynastream/emf v0.1.0
	github.com/dynastream/dynastream/eventbus v0.1.0
	github.com/dynastream/dynastream/idempotency v0.1.0
	github.com/dynastream/dynastream/replay v0.1.0
	github.com/dynastream/dynastream/stream v0.1.0
	github.com/getkin/kin-openapi v0.152.0
	github.com/golang-jwt/jwt/v5 v5.3.1
	github.com/google/go-cmp v0.7.0
	github.com/oklog/ulid/v2 v2.1.2
	github.com/schollz/progressbar/v3 v3.19.1
	golang.org/x/mod v0.30.0
	golang.org/x/term v0.44.0
	golang.org/x/text v0.14.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/MicahParks/jwkset v0.11.3 // indirect
	github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream v1.7.26 // indirect
	github.com/aws/aws-sdk-go-v2/feature/ec2/imds v1.20.6 // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.9 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/eventbridge v1.55.8 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.24 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/endpoint-discovery v1.13.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.9 // indirect
	github.com/aws/aws-sdk-go-v2/service/signin v1.12.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/sso v1.39.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/ssooidc v1.44.2 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.51.7 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/kr/pretty v0.3.1 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/oasdiff/yaml v0.1.1 // indirect
	github.com/oasdiff/yaml3 v0.0.14 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/time v0.15.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

// The library's modules, in this repository; go.work uses them too.
replace (
	github.com/dynastream/dynastream/attr => ./attr
	github.com/dynastream/dynastream/awserr => ./awserr
	github.com/dynastream/dynastream/consumer => ./consumer
	github.com/dynastream/dynastream/ddblocal => ./ddblocal
	github.com/dynastream/dynastream/emf => ./emf
	github.com/dynastream/dynastream/eventbus => ./eventbus
	github.com/dynastream/dynastream/idempotency => ./idempotency
	github.com/dynastream/dynastream/replay => ./replay
	github.com/dynastream/dynastream/stream => ./stream
)

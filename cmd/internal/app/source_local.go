//go:build !lambda.norpc

package app

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdk "github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/dynastream/dynastream/internal/ddb"
	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/kinesis"
)

// streamSource is what a consumer's Runner reads, by STREAM_SOURCE: the
// table's DynamoDB stream, or (kinesis) the Kinesis data stream
// KINESIS_STREAM_ARN names, at KINESIS_ENDPOINT when set (moto_server's,
// on the local stack; devstack sets both). A Lambda build never reads
// here: its records come in the event (source_lambda.go).
func streamSource(ctx context.Context, clients *ddb.Clients, table string) (stream.API, string, error) {
	switch src := Getenv("STREAM_SOURCE", SourceDynamoDB); src {
	case SourceDynamoDB:
		arn, err := store.StreamARN(ctx, clients.DB, table)
		if err != nil {
			return nil, "", fmt.Errorf("find the table's stream (is the table created? `make run` creates it): %w", err)
		}
		return clients.Streams, arn, nil
	case SourceKinesis:
		arn := os.Getenv("KINESIS_STREAM_ARN")
		if arn == "" {
			return nil, "", fmt.Errorf("STREAM_SOURCE=kinesis needs KINESIS_STREAM_ARN, the Kinesis data stream the table writes its changes to")
		}
		kc := sdk.NewFromConfig(clients.AWS, func(o *sdk.Options) {
			if ep := os.Getenv("KINESIS_ENDPOINT"); ep != "" {
				o.BaseEndpoint = aws.String(ep)
			}
		})
		return &kinesis.Source{Client: kc, PartitionKey: store.AttrPK}, arn, nil
	default:
		return nil, "", fmt.Errorf("STREAM_SOURCE=%q: want %s or %s", src, SourceDynamoDB, SourceKinesis)
	}
}

// Command orders runs the orders totals projection (package orders) as a
// deployed consumer: under Lambda (the function in ../../template.yaml)
// through consumer.Start, and anywhere else as a stream.Runner on the
// table's stream with the admin endpoint, for a laptop against DynamoDB
// Local or for a container.
//
// Settings (environment):
//
//	ORDERS_TABLE       the orders table (required; on a local endpoint it is created when
//	                   missing, keys PK and SK with a NEW_AND_OLD_IMAGES stream)
//	DEADLETTER_TABLE   where records that can never be handled go (required in Lambda;
//	                   locally the default is a file, deadletters.jsonl)
//	METRICS_NAMESPACE  CloudWatch namespace of the EMF metrics (default "orders")
//	DYNAMODB_ENDPOINT  a local endpoint (DynamoDB Local: no AWS account or credentials needed); empty: AWS
//	ADMIN_ADDR         the runner's admin endpoint (default 127.0.0.1:9300; "" for none)
//	CHECKPOINT_TABLE   the runner's checkpoints (default <ORDERS_TABLE>-checkpoints)
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/dynastream/dynastream/consumer"
	"github.com/dynastream/dynastream/ddblocal"
	"github.com/dynastream/dynastream/examples/orders"
	"github.com/dynastream/dynastream/stream"
)

// Name is the consumer's name in metrics and dead letters.
const Name = "orders-totals"

// settings are the program's configuration, read once and checked.
type settings struct {
	table, deadLetterTable, namespace, endpoint, adminAddr, checkpointTable string
	lambda                                                                  bool
}

func load() (settings, error) {
	s := settings{
		table: os.Getenv("ORDERS_TABLE"), deadLetterTable: os.Getenv("DEADLETTER_TABLE"),
		namespace: os.Getenv("METRICS_NAMESPACE"), endpoint: os.Getenv("DYNAMODB_ENDPOINT"),
		checkpointTable: os.Getenv("CHECKPOINT_TABLE"), lambda: os.Getenv("AWS_LAMBDA_RUNTIME_API") != "",
	}
	s.adminAddr = "127.0.0.1:9300"
	if v, ok := os.LookupEnv("ADMIN_ADDR"); ok {
		s.adminAddr = v
	}
	if s.namespace == "" {
		s.namespace = "orders"
	}
	if s.checkpointTable == "" {
		s.checkpointTable = s.table + "-checkpoints"
	}
	var errs []error
	if s.table == "" {
		errs = append(errs, errors.New("ORDERS_TABLE is required"))
	}
	if s.lambda && s.deadLetterTable == "" {
		errs = append(errs, errors.New("DEADLETTER_TABLE is required in Lambda (a function has no disk for dead letters)"))
	}
	return s, errors.Join(errs...)
}

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	s, err := load()
	if err != nil {
		log.Error("bad configuration", "err", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, streams, err := clients(ctx, s.endpoint)
	if err != nil {
		log.Error("AWS configuration", "err", err)
		os.Exit(1)
	}
	p := &orders.Totals{DB: db, Table: s.table}
	metrics := &consumer.EMF{Namespace: s.namespace}
	var dl stream.DeadLetters = &stream.FileDeadLetters{Path: "deadletters.jsonl"}
	if s.deadLetterTable != "" {
		dl = &stream.TableDeadLetters{DB: db, Table: s.deadLetterTable}
	}
	dl = metrics.CountDeadLetters(dl, Name)

	if s.lambda {
		consumer.Start(p.Handler(), consumer.Options{Name: Name, DeadLetters: dl, Filter: orders.Filter, Observe: metrics.Observe, Logger: log})
		return
	}
	if err := run(ctx, log, s, db, streams, p, dl, metrics); err != nil {
		log.Error("runner", "err", err)
		os.Exit(1)
	}
}

// clients are the DynamoDB and Streams clients: for a local endpoint
// (DynamoDB Local) ddblocal's, which need no AWS account (fixed
// credentials and region, response checksums off); otherwise from the
// default configuration (in Lambda, the function's role).
func clients(ctx context.Context, endpoint string) (*dynamodb.Client, *dynamodbstreams.Client, error) {
	if endpoint != "" {
		db, streams := ddblocal.Clients(endpoint)
		return db, streams, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, nil, err
	}
	return dynamodb.NewFromConfig(cfg), dynamodbstreams.NewFromConfig(cfg), nil
}

// run consumes the table's stream with a Runner: the same handler, the
// same metrics, checkpoints in a table of their own, the admin endpoint.
func run(ctx context.Context, log *slog.Logger, s settings, db *dynamodb.Client, streams *dynamodbstreams.Client, p *orders.Totals, dl stream.DeadLetters, metrics *consumer.EMF) error {
	arn, err := ordersStream(ctx, log, db, s.table, s.endpoint != "")
	if err != nil {
		return err
	}
	cps := &stream.TableCheckpoints{DB: db, Table: s.checkpointTable}
	if err := cps.CreateTable(ctx); err != nil {
		return err
	}
	r := &stream.Runner{
		Config: stream.Config{StreamARN: arn, Consumer: Name, Filter: orders.Filter}, // three retries, bisection: the defaults, as the template
		API:    streams, Checkpoints: cps, DeadLetters: dl, Logger: log,
	}
	if s.adminAddr != "" {
		ln, err := net.Listen("tcp", s.adminAddr)
		if err != nil {
			return fmt.Errorf("ADMIN_ADDR: %w", err)
		}
		srv := &http.Server{Handler: consumer.Admin(r, consumer.AdminOptions{}), ReadHeaderTimeout: 5 * time.Second}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		go func() { _ = srv.Serve(ln) }()
		log.Info("admin endpoint", "addr", ln.Addr().String(), "paths", "GET /healthz /status, POST /pause /resume")
	}
	// the event source mapping's metrics (PolledEventCount, DroppedEventCount…)
	mapping := &consumer.Mapping{EMF: metrics, Consumer: Name, Runner: r}
	go mapping.Run(ctx, time.Minute)
	log.Info("consuming", "table", s.table, "stream", arn)
	return r.Run(ctx, consumer.Instrument(p.Handler(), Name, metrics.Observe))
}

// ordersStream is the orders table's stream. On a local endpoint
// (DynamoDB Local) a missing table is created with template.yaml's keys
// and stream: PK and SK, NEW_AND_OLD_IMAGES, on demand (not its TTL: the
// idempotency markers then stay, which changes no total). In AWS the
// template owns the table, and a missing one is an error.
func ordersStream(ctx context.Context, log *slog.Logger, db *dynamodb.Client, table string, local bool) (string, error) {
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var missing *types.ResourceNotFoundException
	switch {
	case errors.As(err, &missing) && local:
		in := ddblocal.Schema("PK", "SK")
		in.TableName = aws.String(table)
		in.BillingMode = types.BillingModePayPerRequest
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}
		arn, err := ddblocal.CreateTable(ctx, db, &in)
		if err != nil {
			return "", err
		}
		log.Info("created the orders table", "table", table, "stream", arn)
		return arn, nil
	case err != nil:
		return "", fmt.Errorf("the orders table: %w", err)
	case desc.Table.LatestStreamArn == nil:
		return "", fmt.Errorf("the orders table %s has no stream (NEW_AND_OLD_IMAGES)", table)
	}
	return *desc.Table.LatestStreamArn, nil
}

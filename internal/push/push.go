package push

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi/types"
)

// ErrGone is a push to a connection that is gone (410 GoneException).
var ErrGone = errors.New("push: the connection is gone")

// Client pushes frames to connections.
type Client struct {
	API *apigatewaymanagementapi.Client
}

// New returns a Client for the management endpoint: in AWS
// https://<api id>.execute-api.<region>.amazonaws.com/<stage>, locally
// the writer's URL.
func New(cfg aws.Config, endpoint string) *Client {
	return &Client{API: apigatewaymanagementapi.NewFromConfig(cfg, func(o *apigatewaymanagementapi.Options) {
		o.BaseEndpoint = aws.String(endpoint)
	})}
}

// Push sends one frame to one connection.
func (c *Client) Push(ctx context.Context, connectionID string, frame []byte) error {
	_, err := c.API.PostToConnection(ctx, &apigatewaymanagementapi.PostToConnectionInput{ConnectionId: aws.String(connectionID), Data: frame})
	return outcome("push to", connectionID, err)
}

// Close closes one connection (DeleteConnection); API Gateway then runs
// the API's $disconnect route. A connection that is gone answers ErrGone.
func (c *Client) Close(ctx context.Context, connectionID string) error {
	_, err := c.API.DeleteConnection(ctx, &apigatewaymanagementapi.DeleteConnectionInput{ConnectionId: aws.String(connectionID)})
	return outcome("close", connectionID, err)
}

// outcome is a management call's error: ErrGone for a connection that is
// gone (410 GoneException), else the error wrapped with what was done.
func outcome(what, connectionID string, err error) error {
	var gone *types.GoneException
	switch {
	case errors.As(err, &gone):
		return fmt.Errorf("%w: %s", ErrGone, connectionID)
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, connectionID, err)
	}
	return nil
}

package onfailure

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/dynastream/dynastream/stream"
)

// SNSAPI is the part of the SNS client the SNS destination uses.
type SNSAPI interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// SNS is a stream.DeadLetters that does what the event source mapping
// does with an SNS on-failure destination: it publishes the record SQS
// gets (stream.FailureRecord) to the topic. Redrive reads it from a queue
// subscribed to the topic (the notification's envelope, or the raw
// message). Records that could not be converted go to Undecodable, as
// with SQS.
type SNS struct {
	Client      SNSAPI
	TopicARN    string
	FunctionARN string
	Undecodable stream.DeadLetters
}

// Put implements stream.DeadLetters.
func (d *SNS) Put(ctx context.Context, dl stream.DeadLetter) error {
	body, err := messageOf(ctx, d.Undecodable, dl, d.FunctionARN)
	if body == nil || err != nil {
		return err
	}
	if _, err := d.Client.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(d.TopicARN), Message: aws.String(string(body))}); err != nil {
		return fmt.Errorf("onfailure: publish to the on-failure topic: %w", err)
	}
	return nil
}

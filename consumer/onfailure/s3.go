package onfailure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/dynastream/dynastream/attr"
	"github.com/dynastream/dynastream/stream"
)

// S3API is the part of the S3 client the S3 destination and RedriveS3 use.
type S3API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

// S3Record is what the event source mapping writes to an S3 on-failure
// destination: the record it sends to SQS or SNS (stream.FailureRecord)
// and the whole invocation's payload, the records themselves ("For Amazon
// S3 destinations, Lambda also sends the entire invocation record along
// with the metadata": Lambda, "Retain discarded records for a DynamoDB
// event source",
// https://docs.aws.amazon.com/lambda/latest/dg/services-dynamodb-errors.html).
// So a redrive from S3 needs no stream: it works after the stream has
// trimmed the records (24 hours).
//
// Its example names the form: "the payload field contains the original
// invocation record as an escaped JSON string" (Example Amazon S3
// invocation record): MarshalJSON writes the event's JSON as a string,
// "payload":"{\"Records\":[…]}", and ReadS3Record reads that or the
// event as an object (what this package wrote before v0.1.0).
type S3Record struct {
	stream.FailureRecord
	Payload events.DynamoDBEvent
}

// MarshalJSON writes the failure record's fields and "payload": the
// event's JSON as an escaped JSON string, as Lambda writes it.
func (r S3Record) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(r.FailureRecord)
	if err != nil {
		return nil, err
	}
	event, err := json.Marshal(r.Payload)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(string(event))
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	b.WriteString(`,"payload":`)
	b.Write(payload)
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the object as ReadS3Record does (the failure
// record's own decoding would otherwise leave the payload out).
func (r *S3Record) UnmarshalJSON(b []byte) error {
	v, err := ReadS3Record(b)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// ReadS3Record reads an object an S3 destination holds: its payload an
// escaped JSON string, as Lambda writes it, or a JSON object.
func ReadS3Record(body []byte) (S3Record, error) {
	var r S3Record
	if err := json.Unmarshal(body, &r.FailureRecord); err != nil { // its own decoding (either batch info)
		return S3Record{}, err
	}
	var raw struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return S3Record{}, err
	}
	p := raw.Payload
	var s string
	if len(p) > 0 && p[0] == '"' && json.Unmarshal(p, &s) == nil {
		p = []byte(s)
	}
	if len(p) == 0 || string(p) == "null" {
		return r, errors.New("no payload: the object holds no records")
	}
	if err := attr.UnmarshalJSON(p, &r.Payload); err != nil { // what aws-lambda-go panics on is an error
		return r, fmt.Errorf("payload: %w", err)
	}
	if len(r.Payload.Records) == 0 {
		return r, errors.New("the payload holds no records")
	}
	return r, nil
}

// ObjectKey is the name an S3 destination gives an invocation record:
// aws/lambda/<mapping id>/<shard id>/YYYY/MM/DD/YYYY-MM-DDTHH.MM.SS-<id>,
// as Lambda's page describes it (the mapping's UUID there; any name
// locally).
func ObjectKey(mappingID, shardID string, at time.Time, id string) string {
	at = at.UTC()
	return fmt.Sprintf("aws/lambda/%s/%s/%s/%s-%s", mappingID, shardID, at.Format("2006/01/02"), at.Format("2006-01-02T15.04.05"), id)
}

// S3 is a stream.DeadLetters that does what the event source mapping does
// with an S3 on-failure destination: it writes an S3Record (the failure
// record and the records) under ObjectKey. The object's name ends with the
// dead letter's ID (not its last call's request id, which the halves of a
// bisected batch share), so a Put retried after an answer that was lost
// writes the same object again. Records that could not be converted go to
// Undecodable (with their raw JSON), as with SQS.
type S3 struct {
	Client S3API
	Bucket string
	// MappingID names the mapping in the object keys (its UUID in AWS; the
	// consumer's name will do locally).
	MappingID   string
	FunctionARN string
	Undecodable stream.DeadLetters
}

// Put implements stream.DeadLetters.
func (d *S3) Put(ctx context.Context, dl stream.DeadLetter) error {
	if err := undecodable(ctx, d.Undecodable, dl); err != nil {
		return err
	}
	fr, ok := dl.FailureRecord(d.FunctionARN)
	if !ok {
		return nil
	}
	body, err := json.Marshal(S3Record{FailureRecord: fr, Payload: events.DynamoDBEvent{Records: dl.Event.Records}})
	if err != nil {
		return err
	}
	key := ObjectKey(d.MappingID, fr.BatchInfo.ShardID, fr.Timestamp, dl.ID())
	if _, err := d.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(d.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentType: aws.String("application/json")}); err != nil {
		return fmt.Errorf("onfailure: write s3://%s/%s: %w", d.Bucket, key, err)
	}
	return nil
}

// S3Options say what RedriveS3 reads and whom it hands the records to.
type S3Options struct {
	Client S3API
	Bucket string
	// Prefix narrows the objects read (default "aws/lambda/"; add the
	// mapping id to keep to one mapping).
	Prefix string
	// Handler gets each object's records, as Options.Handler does.
	Handler  stream.Handler
	Function func(functionARN string) bool
	Logger   *slog.Logger
}

// S3Report is what RedriveS3 did, object by object.
type S3Report struct {
	// Redriven counts objects whose records all succeeded (deleted), and
	// Records those records.
	Redriven, Records int
	// Failed are objects whose records failed again, Unreadable those that
	// hold no S3Record (both kept).
	Failed, Unreadable []Object
	// Others counts objects of other consumers, left alone.
	Others int
	// Windows are objects of tumbling windows whose final call was given
	// up on (kept), as Report.Windows.
	Windows []Object
}

// Object is an on-failure object RedriveS3 did not delete, and why.
type Object struct {
	Key    string
	Record stream.FailureRecord
	Err    error
}

// RedriveS3 reads an S3 on-failure destination — the event source
// mapping's in AWS, an S3's locally — and hands each object's records (its
// payload: no stream read, so it works after the stream trimmed them) to
// the handler once, deleting the object when all succeeded.
func RedriveS3(ctx context.Context, o S3Options) (S3Report, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = "aws/lambda/"
	}
	var rep S3Report
	p := s3.NewListObjectsV2Paginator(o.Client, &s3.ListObjectsV2Input{Bucket: aws.String(o.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return rep, fmt.Errorf("onfailure: list s3://%s/%s: %w", o.Bucket, prefix, err)
		}
		for _, obj := range page.Contents {
			key := aws.ToString(obj.Key)
			out, err := o.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(o.Bucket), Key: obj.Key})
			if err != nil {
				return rep, fmt.Errorf("onfailure: read s3://%s/%s: %w", o.Bucket, key, err)
			}
			body, err := io.ReadAll(out.Body)
			out.Body.Close()
			if err != nil {
				return rep, fmt.Errorf("onfailure: read s3://%s/%s: %w", o.Bucket, key, err)
			}
			rec, err := ReadS3Record(body)
			item := Object{Key: key, Record: rec.FailureRecord}
			if rec.Window != nil && (o.Function == nil || o.Function(rec.RequestContext.FunctionARN)) {
				item.Err = errWindow
				rep.Windows = append(rep.Windows, item)
				log.Error("on-failure object of a window's final call (kept): make it again with the window handler", "key", key)
				continue
			}
			if err != nil {
				item.Err = err
				rep.Unreadable = append(rep.Unreadable, item)
				log.Error("on-failure object holds no invocation record (kept)", "key", key, "err", err)
				continue
			}
			if o.Function != nil && !o.Function(rec.RequestContext.FunctionARN) {
				rep.Others++
				continue
			}
			if err := stream.Resubmit(ctx, o.Handler, stream.DeadLetter{Event: rec.Payload}); err != nil {
				item.Err = err
				rep.Failed = append(rep.Failed, item)
				log.Error("redriven records failed again (object kept)", "key", key, "err", err)
				continue
			}
			if _, err := o.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(o.Bucket), Key: obj.Key}); err != nil {
				return rep, fmt.Errorf("onfailure: delete s3://%s/%s (its records were handled; a rerun hands them over again): %w", o.Bucket, key, err)
			}
			rep.Redriven++
			rep.Records += len(rec.Payload.Records)
			log.Info("records redriven; object deleted", "key", key, "records", len(rec.Payload.Records))
		}
	}
	return rep, nil
}

// undecodable hands records that could not be converted to their sink:
// no destination can carry them in a form a redrive reads.
func undecodable(ctx context.Context, sink stream.DeadLetters, dl stream.DeadLetter) error {
	if len(dl.Unconverted) == 0 {
		return nil
	}
	if sink == nil {
		return errors.New("onfailure: records that could not be converted, and no Undecodable sink for them")
	}
	return sink.Put(ctx, stream.DeadLetter{Consumer: dl.Consumer, StreamARN: dl.StreamARN, ShardID: dl.ShardID,
		Attempts: dl.Attempts, Error: dl.Error, FailedAt: dl.FailedAt, Unconverted: dl.Unconverted, Condition: dl.Condition})
}

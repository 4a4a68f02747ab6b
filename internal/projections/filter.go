package projections

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/dynastream/dynastream/internal/store"
	"github.com/dynastream/dynastream/stream"
	"github.com/dynastream/dynastream/stream/filter"
)

// pendingPattern keeps the records of the recipes' pending items
// (store.PendingKey): derived, but the projector's to drain (drain.go);
// not those of the ledgers beside them.
// Lambda filters a DynamoDB record on its keys as on its images
// (lambda/latest/dg/with-ddb-filtering.html).
const pendingPattern = `{"dynamodb":{"Keys":{"PK":{"S":[{"prefix":"PENDING#"}]},"SK":{"S":["PENDING"]}}}}`

// Filter is the projector's event source mapping's FilterCriteria, which
// the local runner applies too: stream.LoopGuard (its own derived writes
// dropped), and the records of the recipes' pending items, which ask it to
// drain them. infra/template.yaml is written from it (its test compares).
func Filter() filter.Criteria {
	return append(stream.LoopGuard(store.AttrPK), filter.MustCriteria(pendingPattern)...)
}

// Skip is the loop guard inside the handler (stream.Config.Skip): the
// derived records Filter drops.
func Skip(r events.DynamoDBEventRecord) bool {
	return stream.SkipDerived(r) && !isPending(r)
}

// isPending reports whether a record is a recipe's pending item's.
func isPending(r events.DynamoDBEventRecord) bool {
	pk, sk := r.Change.Keys[store.AttrPK], r.Change.Keys[store.AttrSK]
	return pk.DataType() == events.DataTypeString && sk.DataType() == events.DataTypeString && store.IsPendingKey(pk.String(), sk.String())
}

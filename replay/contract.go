package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// The rules of Lambda's partial batch response for stream event sources
// (FunctionResponseTypes: ReportBatchItemFailures), as AWS documents them:
// https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html
//
// Lambda reads a handler's answer strictly, and several mistakes do not fail
// loudly: they turn into a whole batch retried (records that succeeded are
// delivered again, and a batch that always answers this way is retried until
// the retry limit or the record age sends it to the on-failure destination)
// or, worse, into a batch taken as a success (the records meant to be
// retried are checkpointed past: lost). CheckResponse finds them; Deliver
// and Check apply it to every handler call unless a schedule sets
// SkipContractCheck.
const (
	// RuleErrorWithFailures: the handler returned an error and batch item
	// failures. Lambda ignores the response of a failed invocation and
	// retries the whole batch (bisected with BisectBatchOnFunctionError);
	// to have only some records retried, report them with a nil error.
	// (The page: an invocation that fails is bisected "regardless of your
	// ReportBatchItemFailures setting".)
	RuleErrorWithFailures = "error-with-failures"
	// RuleUnknownMember: the response has a member other than
	// batchItemFailures (a misspelling such as batchItemFailure or
	// BatchItemFailures). Lambda finds no batchItemFailures and treats the
	// batch as a complete success: the records meant to be retried are
	// lost.
	// (The page lists an empty or null response as a success; a response
	// whose only member Lambda does not read is one.)
	RuleUnknownMember = "unknown-member"
	// RuleMalformed: the response is not a JSON object, or its
	// batchItemFailures not a list of objects: not the syntax the page
	// gives; the kit treats it as a complete failure.
	RuleMalformed = "malformed"
	// RuleBadIdentifierKey: a failure without itemIdentifier (a misspelled
	// key such as itemIdentifer or ItemIdentifier, or a null value). The
	// page lists both as a complete failure.
	RuleBadIdentifierKey = "bad-identifier-key"
	// RuleEmptyIdentifier: an itemIdentifier that is an empty string. The
	// page lists it as a complete failure.
	RuleEmptyIdentifier = "empty-identifier"
	// RuleUnknownIdentifier: an itemIdentifier that is not the sequence
	// number (dynamodb.SequenceNumber) of a record of the batch — often the
	// record's eventID, or a record of another batch. The page does not
	// say what Lambda makes of it (it checkpoints at the lowest reported
	// sequence number, and this one is in no batch); the kit treats it as a
	// complete failure, like an empty identifier, and refuses it, as it is
	// never what was meant.
	RuleUnknownIdentifier = "unknown-identifier"
)

// docURL is the page every rule follows.
const docURL = "https://docs.aws.amazon.com/lambda/latest/dg/services-ddb-batchfailurereporting.html"

// What Lambda does with each kind of mistake.
const (
	wholeBatchRetried = "Lambda treats the whole batch as failed: it retries all of it (bisected with BisectBatchOnFunctionError), " +
		"delivering the records that succeeded again, and a batch that always answers this way is retried until the retry limit " +
		"or the maximum record age sends it to the on-failure destination"
	takenAsSuccess = "Lambda finds no batchItemFailures and treats the whole batch as a success: the checkpoint moves past it " +
		"and the records meant to be retried are never delivered again"
)

// ContractError is a handler response that Lambda reads differently from
// what its author most likely meant.
type ContractError struct {
	Rule   string // one of the Rule constants
	Detail string // what the response said
	Lambda string // what Lambda would do with it
}

// Error says which rule the response broke, what it said, and what Lambda
// does with it, with the page that says so.
func (e *ContractError) Error() string {
	return fmt.Sprintf("replay: the handler's response breaks Lambda's batch response contract (%s): %s. %s (%s)", e.Rule, e.Detail, e.Lambda, docURL)
}

// CheckResponse checks a stream handler's answer to a batch — the response
// as the JSON Lambda would read, and the error it returned — against
// Lambda's partial batch response contract (the Rule constants), and
// returns a *ContractError for the first rule it breaks, nil when Lambda
// would read the answer as meant. A nil or empty response, or an empty
// batchItemFailures, is a complete success; an error with no failures, a
// complete failure: both are as meant.
//
// Deliver calls it on every handler call; call it yourself for a handler
// that does not return events.DynamoDBEventResponse.
func CheckResponse(batch []events.DynamoDBEventRecord, response []byte, handlerErr error) error {
	var top map[string]json.RawMessage
	if t := bytes.TrimSpace(response); len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		if err := json.Unmarshal(t, &top); err != nil {
			return &ContractError{Rule: RuleMalformed, Detail: fmt.Sprintf("the response %s is not a JSON object", clip(t)), Lambda: wholeBatchRetried}
		}
	}
	for _, k := range sortedKeys(top) {
		if k != "batchItemFailures" {
			return &ContractError{Rule: RuleUnknownMember, Detail: fmt.Sprintf("the response has a member %q, which Lambda does not read", k), Lambda: takenAsSuccess}
		}
	}
	raw := top["batchItemFailures"]
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return &ContractError{Rule: RuleMalformed, Detail: fmt.Sprintf("batchItemFailures is %s, not a list of objects", clip(raw)), Lambda: wholeBatchRetried}
	}
	if handlerErr != nil && len(items) > 0 {
		return &ContractError{Rule: RuleErrorWithFailures,
			Detail: fmt.Sprintf("the handler returned the error %q together with %d batch item failures", handlerErr, len(items)),
			Lambda: "Lambda ignores the response of an invocation that failed: " + wholeBatchRetried + "; to have only these records retried, return them with a nil error"}
	}
	seqs := make(map[string]bool, len(batch))
	eventIDs := make(map[string]bool, len(batch))
	for _, r := range batch {
		seqs[r.Change.SequenceNumber] = true
		eventIDs[r.EventID] = true
	}
	for i, item := range items {
		v, ok := item["itemIdentifier"]
		if !ok || bytes.Equal(v, []byte("null")) {
			keys := strings.Join(sortedKeys(item), ", ")
			return &ContractError{Rule: RuleBadIdentifierKey, Detail: fmt.Sprintf("batchItemFailures[%d] has no itemIdentifier (its members: %s)", i, cmpOr(keys, "none")), Lambda: wholeBatchRetried}
		}
		var id string
		if err := json.Unmarshal(v, &id); err != nil {
			return &ContractError{Rule: RuleUnknownIdentifier, Detail: fmt.Sprintf("batchItemFailures[%d].itemIdentifier is %s, not a string", i, clip(v)), Lambda: wholeBatchRetried}
		}
		switch {
		case id == "":
			return &ContractError{Rule: RuleEmptyIdentifier, Detail: fmt.Sprintf("batchItemFailures[%d].itemIdentifier is empty", i), Lambda: wholeBatchRetried}
		case seqs[id]:
		case eventIDs[id]:
			return &ContractError{Rule: RuleUnknownIdentifier,
				Detail: fmt.Sprintf("batchItemFailures[%d].itemIdentifier %q is a record's eventID; Lambda wants its dynamodb.SequenceNumber", i, id), Lambda: wholeBatchRetried}
		default:
			return &ContractError{Rule: RuleUnknownIdentifier,
				Detail: fmt.Sprintf("batchItemFailures[%d].itemIdentifier %q is not the sequence number of a record of this batch", i, id), Lambda: wholeBatchRetried}
		}
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

package eventbus

import (
	"errors"

	"github.com/dynastream/dynastream/awserr"
)

// PermanentError reports an entry that will fail the same way however
// often it is sent: EventBridge rejected it as it is (MalformedDetail,
// InvalidArgument, …). Dead-letter it rather than retry it.
type PermanentError struct {
	// Code is the service's error code (e.g. "MalformedDetail"); "" for
	// the SDK's own input validation.
	Code    string
	Message string
}

func (e *PermanentError) Error() string {
	if e.Code == "" {
		return "eventbus: permanent failure: " + e.Message
	}
	return "eventbus: permanent failure (" + e.Code + "): " + e.Message
}

// EntryError is a failure EventBridge reported for one entry of a
// PutEvents response that is not permanent: a transient one
// (InternalFailure, ThrottlingException), returned once the attempts are
// used up, or a configuration one (AccessDeniedException,
// NotAuthorizedForSourceException, NotAuthorizedForDetailTypeException),
// returned at once. Either way the entry is worth redelivering later.
type EntryError struct {
	Code    string
	Message string
}

func (e *EntryError) Error() string {
	code := e.Code
	if code == "" {
		code = "no error code"
	}
	return "eventbus: entry failed (" + code + "): " + e.Message
}

// IsPermanent reports whether err (or an error it wraps) says the entry can
// never be published as it is: a *PermanentError or a *TooLargeError. Any
// other non-nil error from Publish is worth retrying later.
func IsPermanent(err error) bool {
	var pe *PermanentError
	var tl *TooLargeError
	return errors.As(err, &pe) || errors.As(err, &tl)
}

// Per-entry error codes of a PutEvents response (PutEventsResultEntry.
// ErrorCode). The service documents InternalFailure and ThrottlingException
// as the retryable ones; every other code is not retryable. Of those, the
// authorization ones are configuration errors (a policy fix makes the same
// entry succeed), so they are not permanent; the rest (MalformedDetail,
// InvalidArgument, InvalidAccountIdException, RedactionFailure and codes
// unknown here) are.
var (
	retryableEntryCodes = map[string]bool{
		"InternalFailure":     true,
		"ThrottlingException": true,
	}
	configEntryCodes = map[string]bool{
		"AccessDeniedException":               true,
		"NotAuthorizedForSourceException":     true,
		"NotAuthorizedForDetailTypeException": true,
	}
)

func classifyEntry(code string) awserr.Class {
	switch {
	case retryableEntryCodes[code]:
		return awserr.Retryable
	case configEntryCodes[code]:
		return awserr.Fatal
	}
	return awserr.Permanent
}

// throttleCodes are retried like HTTP 429 whatever the status code
// (EventBridge answers throttling with HTTP 400 ThrottlingException).
var throttleCodes = map[string]bool{
	"ThrottlingException":                    true,
	"Throttling":                             true,
	"TooManyRequestsException":               true,
	"RequestLimitExceeded":                   true,
	"ProvisionedThroughputExceededException": true,
}

// classifyCall is the single retry decision for a failed PutEvents call.
//
//   - retryable: throttling, server faults (5xx, InternalException) and
//     transport errors (no response, connection reset, timeouts);
//   - permanent: the SDK's own input validation (the same input fails
//     again without reaching the service);
//   - fatal: any other client error (4xx): ValidationException,
//     ResourceNotFoundException (no such bus), AccessDeniedException,
//     bad credentials… A whole-call rejection is not pinned on one entry
//     and is most likely configuration, so the entries are not dead-lettered:
//     redelivery after the fix publishes them.
func classifyCall(err error) awserr.Class {
	return awserr.Classify(err, throttleCodes, nil)
}

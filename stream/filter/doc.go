// Package filter evaluates Lambda's event filtering on DynamoDB stream
// records: the patterns of an event source mapping's FilterCriteria, with
// the syntax and limits Lambda documents, so that one Go value is the
// filter a template declares, the filter the local Runner and the replay
// kit apply, and the defence a Lambda handler applies to what a mapping
// without (or with an older) filter lets through.
//
// A pattern is matched against the record's JSON as the function receives
// it (aws-lambda-go's events.DynamoDBEventRecord): "dynamodb" holds Keys,
// NewImage, OldImage (attributes in their typed form, {"S": "…"}),
// SequenceNumber, SizeBytes, StreamViewType and ApproximateCreationDateTime;
// beside it eventName, eventID, userIdentity and the rest. Rules:
//
//	"a"  5  true  null                   equals (a string, a number, a boolean, null)
//	""                                   the empty string
//	{"equals-ignore-case": "a"}          equals, ignoring case
//	{"prefix": "a"}  {"suffix": "a"}     begins or ends with (either also as
//	                                     {"prefix": {"equals-ignore-case": "a"}})
//	{"wildcard": "a*b"}                  * is any run of characters; \* a star
//	{"anything-but": "a" | 5 | ["a", 5]} a value present and none of these
//	{"anything-but": {"prefix": "a"}}    also suffix, equals-ignore-case and
//	                                     wildcard (with a string or a list)
//	{"numeric": [">", 0, "<=", 5]}       a number in range; ["=", 5] equals
//	{"exists": true | false}             the field is there, or not
//
// Rules in one list are alternatives; fields of an object must all match;
// "$or": [{…}, {…}] is a choice of objects. A field holding a list (an L,
// SS, NS or BS attribute) matches when one of its elements does; an object
// of the pattern under a list (an L of M) must match within one element,
// all its fields together ("array consistency", as AWS's matcher has it).
// One difference is known: an {"exists": false} inside such an object
// matches an element without the field (AWS's judges absence over the
// whole list unless a sibling field picked an element, and so also
// matches an empty list).
//
// What the record's JSON implies, and Lambda's documentation warns of:
// exists and every other rule judge leaves only — a pattern that stops at
// an object (NewImage, an M or L attribute) finds nothing there, so
// {"exists": true} never matches it and {"exists": false} always does;
// write the path down to a typed leaf (NewImage.PK.S). Numbers in items are
// strings ({"N": "5"}), so numeric rules match none of them (match them as
// strings, or filter on SizeBytes and ApproximateCreationDateTime, which are
// numbers); a binary is its base64 text.
//
// Limits, as Lambda's: a pattern of at most 4096 characters, at most five
// patterns per mapping (the default quota), numbers within ±5.0e9 with six
// decimals at most. Parse refuses what Lambda refuses (an unknown operator,
// an empty list, a misplaced numeric operator, "**" in a wildcard, cidr),
// naming the place. Lambda's documentation lists equals, equals-ignore-case,
// prefix, suffix, anything-but, numeric and exists for Lambda; wildcard and
// the anything-but forms with prefix, suffix, equals-ignore-case and
// wildcard are the event pattern language's (EventBridge's), accepted here
// as they are there. Lambda also documents that a DynamoDB mapping filters
// on the "dynamodb" key only; this package evaluates every key of the
// record, so keep templates to "dynamodb".
//
// Match is a pure function of the record: a replayed, re-batched or
// duplicated record is filtered the same way every time.
package filter

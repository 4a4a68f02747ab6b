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
// beside it eventName, eventID, userIdentity and the rest. Rules, in
// Lambda's syntax (the default, what Lambda's pages document for a
// DynamoDB mapping):
//
//	"a"  5  true  null                   equals (a string, a number, a boolean, null)
//	""                                   the empty string
//	{"equals-ignore-case": "a"}          equals, ignoring case
//	{"prefix": "a"}  {"suffix": "a"}     begins or ends with
//	{"anything-but": ["a", "b"] | [5]}   a value present and none of these
//	                                     (strings only or numbers only)
//	{"exists": true | false}             the field is there, or not
//
// and in EventBridge's (filter.EventBridge.Parse, for patterns meant for
// an EventBridge rule or a Pipe), also:
//
//	{"prefix": {"equals-ignore-case": "a"}} (and suffix)
//	{"wildcard": "a*b"}                  * is any run of characters; \* a star
//	{"anything-but": "a" | 5}            a single value
//	{"anything-but": {"prefix": "a"}}    also suffix, equals-ignore-case and
//	                                     wildcard (with a string or a list)
//	{"numeric": [">", 0, "<=", 5]}       a number in range; ["=", 5] equals
//
// Lambda's syntax table has numeric rules, but its DynamoDB page says
// "DynamoDB event filtering doesn't support the use of numeric operators
// (numeric equals and numeric range)": Lambda's syntax here refuses them
// everywhere in the record, SizeBytes and ApproximateCreationDateTime too
// (AWS's sample record has the first a number, the second a string, so a
// numeric rule on them may keep other records on AWS than here).
//
// Parse refuses, naming the operator, its place and the page, what
// Lambda's syntax does not have; a mapping that would take it is not
// documented to evaluate it as EventBridge does. anything-but matches any
// value there that is not named, of any type (a BOOL or NULL leaf too),
// as AWS's matcher (event-ruler) does.
//
// A key repeated in one object is read as event-ruler reads a pattern,
// token by token: an object adds its fields to the earlier one's, so
// AWS's own Boolean example {"dynamodb":{"NewImage":…},"dynamodb":
// {"OldImage":…}} wants both; a list of rules replaces the earlier list at
// that path. A repeated "$or", a key that is an object once and a list
// once, and a field named both in an alternative of "$or" and beside it
// are refused: AWS documents nothing for them, and its matcher lets one
// replace the other.
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
// strings ({"N": "5"}): EventBridge's syntax takes numeric rules on them
// and they match none (match them as strings); a binary is its base64
// text.
//
// Limits, as Lambda's: a pattern of at most 4096 characters, at most five
// patterns per mapping (the default quota; up to ten with
// Syntax.CriteriaQuota where AWS raised it on request), numbers within
// ±5.0e9 with six decimals at most. Parse refuses what Lambda refuses (an unknown operator,
// an empty list, a misplaced numeric operator, "**" in a wildcard, cidr, a
// mixed anything-but list), naming the place. Lambda also documents that a
// DynamoDB mapping filters on the "dynamodb" key only; this package
// evaluates every key of the record, so keep templates to "dynamodb".
//
// Match is a pure function of the record: a replayed, re-batched or
// duplicated record is filtered the same way every time.
package filter

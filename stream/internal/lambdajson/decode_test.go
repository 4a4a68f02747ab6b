package lambdajson

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/stream/internal/prop"
)

// reference is aws-lambda-go's decoding (json.Unmarshal into the event),
// its panics counted as refusals.
func reference(payload []byte) (ev events.DynamoDBEvent, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("aws-lambda-go panicked: %v", p)
		}
	}()
	err = json.Unmarshal(payload, &ev)
	return ev, err
}

// sameAsReference fails t when Decode and aws-lambda-go disagree on
// payload: a different event for one both accept, or one accepts what the
// other refuses.
func sameAsReference(t interface {
	Fatalf(string, ...any)
}, payload []byte) {
	want, werr := reference(payload)
	got, gerr := Decode(payload)
	switch {
	case werr != nil && gerr == nil:
		t.Fatalf("aws-lambda-go refuses (%v), Decode accepts:\n%s", werr, payload)
	case werr == nil && gerr != nil:
		t.Fatalf("aws-lambda-go accepts, Decode refuses (%v):\n%s", gerr, payload)
	case werr == nil:
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(events.DynamoDBAttributeValue{})); diff != "" {
			t.Fatalf("events differ (-aws-lambda-go +Decode):\n%s\npayload:\n%s", diff, payload)
		}
	}
}

func fixtures(t testing.TB) [][]byte {
	paths, err := filepath.Glob("../../testdata/lambda/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// edgeCases are payloads where encoding/json's rules show: case-folded and
// repeated members, nulls, wrong types, attribute values with repeated or
// mixed type members, numbers no float64 holds, invalid UTF-8, trailing data.
var edgeCases = []string{
	``, `null`, `{}`, `[]`, `1`, `"x"`, `{} {}`, `{}x`, ` {"Records":[]} `, `{"Records":null}`, `{"records":[{}]}`, `{"RECORDS":[{"eventID":"a"}],"Records":[{"eventName":"b"}]}`,
	`{"Records":[{"eventID":"a","dynamodb":{"Keys":{"PK":{"S":"x"}}}},{"eventID":"b"}],"Records":[{"eventName":"X"}]}`,
	`{"Records":[{"eventID":"a"},{"eventID":"b"}],"Records":[{"eventName":"X"}],"Records":[{},{}]}`,
	`{"Records":[null,{"eventID":null}]}`, `{"Records":[1]}`, `{"Records":{}}`, `{"Records":[{"eventID":1}]}`,
	`{"Records":[{"dynamodb":null}]}`, `{"Records":[{"dynamodb":[]}]}`, `{"Records":[{"userIdentity":null},{"userIdentity":{}},{"USERIDENTITY":{"Type":"Service","principalID":"dynamodb.amazonaws.com"}}]}`,
	`{"Records":[{"dynamodb":{"ApproximateCreationDateTime":null}}]}`, `{"Records":[{"dynamodb":{"ApproximateCreationDateTime":1.5e9}}]}`,
	`{"Records":[{"dynamodb":{"ApproximateCreationDateTime":1e400}}]}`, `{"Records":[{"dynamodb":{"ApproximateCreationDateTime":"1"}}]}`,
	`{"Records":[{"dynamodb":{"ApproximateCreationDateTime":-1795241100.75}}]}`, `{"Records":[{"dynamodb":{"SizeBytes":1.5}}]}`,
	`{"Records":[{"dynamodb":{"SizeBytes":99999999999999999999}}]}`, `{"Records":[{"dynamodb":{"SizeBytes":-7,"sizebytes":null}}]}`,
	`{"Records":[{"dynamodb":{"Keys":null}}]}`, `{"Records":[{"dynamodb":{"Keys":{}}}]}`, `{"Records":[{"dynamodb":{"Keys":{"PK":null}}}]}`,
	`{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"a"}},"keys":{"SK":{"S":"b"}}}}]}`, `{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"a"},"PK":{"N":"1"}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"S":"x","N":"1"}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"S":1,"S":"x"}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"S":"x","S":1}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"NULL":false},"b":{"NULL":[1,{"x":2}]},"c":{"NULL":1e999}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"s":"x"}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"X":1e999,"X":1}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"B":"aGk="},"b":{"B":"aGk"},"c":{"B":""}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"BS":["aGk=",1]}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"BS":[1,"!"]}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"BS":[]},"b":{"SS":[]},"c":{"NS":["1",2]},"d":{"SS":"x"}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"L":[]},"b":{"M":{}},"c":{"L":[{"S":"x"},{"L":[{"NULL":true}]}]}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"L":[null]}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"L":[1e999]}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"M":{"x":{"S":1},"x":{"S":"ok"}}}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"M":{"x":{"S":"ok"},"x":{"S":1}}}}}}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"M":{"x":null}}}}}]}`, `{"Records":[{"dynamodb":{"NewImage":{"a":{"BOOL":"true"},"b":{"BOOL":false}}}}]}`,
	"{\"Records\":[{\"eventID\":\"\xff\xfe\",\"dynamodb\":{\"NewImage\":{\"\xc3\":{\"S\":\"a\xffb\"}}}}]}",
	`{"Records":[{"eventID":"\u00e9\ud800x","dynamodb":{"NewImage":{"\u0041":{"S":"\n\"\\"}}}}]}`,
	`{"Records":[{"eventſourceARN":"folded","eventSourceArn":"x","EVENTSOURCE":"y"}]}`,
	`{"Records":[{"dynamodb":{"NewImage":{"a":{"S":"x"}}}}],"Records":[{"dynamodb":{"NewImage":{"b":{"N":"1"}}}}]}`,
	`{"Records":[{"eventID":"a","unknown":{"deep":[1e999,{"x":null}]}}]}`, `{"Records":[{"dynamodb":{"Keys":{"PK":{"S":"x"}}, "Keys":null}}]}`,
}

func TestDecodeEventMatchesAWSLambdaGo(t *testing.T) {
	for _, p := range fixtures(t) {
		sameAsReference(t, p)
	}
	for _, p := range edgeCases {
		sameAsReference(t, []byte(p))
	}
}

// genPayload draws a stream event as JSON, mostly well-formed and often
// bent the ways encoding/json tolerates or refuses.
func genPayload(t *prop.T) []byte {
	var b strings.Builder
	name := func(canonical string) string {
		switch prop.IntRange(0, 9).Draw(t, "case") {
		case 0:
			return strings.ToUpper(canonical)
		case 1:
			return strings.ToLower(canonical)
		}
		return canonical
	}
	var attr func(depth int) string
	attr = func(depth int) string {
		s := func() string {
			return fmt.Sprintf("%q", prop.SampledFrom([]string{"", "x", "Zurich", "é", "a\\b", "ROOM#1"}).Draw(t, "s"))
		}
		n := func() string {
			return prop.SampledFrom([]string{`"1"`, `"-2.5"`, `"1e3"`, `"x"`, `1`, `1e999`, `null`, `true`}).Draw(t, "n")
		}
		switch prop.IntRange(0, 14).Draw(t, "attr") {
		case 0:
			return `{"S":` + s() + `}`
		case 1:
			return `{"N":` + n() + `}`
		case 2:
			return `{"BOOL":` + prop.SampledFrom([]string{"true", "false", `"true"`, "null"}).Draw(t, "bool") + `}`
		case 3:
			return `{"NULL":` + prop.SampledFrom([]string{"true", "false", "1e999", "[]", `{"a":[1]}`}).Draw(t, "null") + `}`
		case 4:
			return `{"B":` + prop.SampledFrom([]string{`"aGk="`, `""`, `"aGk"`, `"!!"`, `1`}).Draw(t, "b") + `}`
		case 5:
			return `{"SS":[` + strings.Join(prop.SliceOfN(prop.SampledFrom([]string{`"a"`, `"b"`, `1`, `null`}), 0, 3).Draw(t, "ss"), ",") + `]}`
		case 6:
			return `{"NS":[` + strings.Join(prop.SliceOfN(prop.SampledFrom([]string{`"1"`, `"2"`, `3`}), 0, 3).Draw(t, "ns"), ",") + `]}`
		case 7:
			return `{"BS":[` + strings.Join(prop.SliceOfN(prop.SampledFrom([]string{`"aGk="`, `"eA=="`, `"x"`, `7`}), 0, 3).Draw(t, "bs"), ",") + `]}`
		case 8, 9:
			if depth > 2 {
				return `{"S":"deep"}`
			}
			var items []string
			for range prop.IntRange(0, 3).Draw(t, "items") {
				items = append(items, prop.OneOf(prop.Just(attr(depth+1)), prop.SampledFrom([]string{"null", "1", `"x"`})).Draw(t, "item"))
			}
			return `{"L":[` + strings.Join(items, ",") + `]}`
		case 10, 11:
			if depth > 2 {
				return `{"N":"0"}`
			}
			var members []string
			for range prop.IntRange(0, 3).Draw(t, "members") {
				k := prop.SampledFrom([]string{"a", "b", "a", "é"}).Draw(t, "key")
				members = append(members, fmt.Sprintf("%q:%s", k, prop.OneOf(prop.Just(attr(depth+1)), prop.SampledFrom([]string{"null", "[]"})).Draw(t, "v")))
			}
			return `{"M":{` + strings.Join(members, ",") + `}}`
		case 12:
			return prop.SampledFrom([]string{`{}`, `{"S":"a","N":"1"}`, `{"S":1,"S":"a"}`, `{"S":"a","S":1}`, `{"s":"a"}`, `{"X":"y"}`, `null`, `[]`, `"S"`}).Draw(t, "odd")
		}
		return `{"S":"plain"}`
	}
	image := func() string {
		if prop.IntRange(0, 9).Draw(t, "null image") == 0 {
			return "null"
		}
		var members []string
		for range prop.IntRange(0, 4).Draw(t, "attrs") {
			members = append(members, fmt.Sprintf("%q:%s", prop.SampledFrom([]string{"PK", "SK", "itemType", "a", "PK"}).Draw(t, "attr name"), attr(0)))
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	record := func() string {
		if prop.IntRange(0, 19).Draw(t, "null record") == 0 {
			return "null"
		}
		var members []string
		add := func(k, v string) { members = append(members, fmt.Sprintf("%q:%s", name(k), v)) }
		str := func() string {
			return prop.SampledFrom([]string{`"INSERT"`, `"MODIFY"`, `"REMOVE"`, `"x"`, `null`, `1`, `""`}).Draw(t, "str")
		}
		for _, f := range []string{"awsRegion", "eventID", "eventName", "eventSource", "eventVersion", "eventSourceARN"} {
			if prop.IntRange(0, 4).Draw(t, "has "+f) > 0 {
				add(f, str())
			}
		}
		if prop.Bool().Draw(t, "identity") {
			add("userIdentity", prop.SampledFrom([]string{`null`, `{}`, `{"type":"Service","principalId":"dynamodb.amazonaws.com"}`, `{"Type":1}`}).Draw(t, "identity v"))
		}
		var change []string
		addc := func(k, v string) { change = append(change, fmt.Sprintf("%q:%s", name(k), v)) }
		addc("ApproximateCreationDateTime", prop.SampledFrom([]string{"1795241100", "1795241100.5", "null", "1e400", `"1"`, "-1", "0.000001"}).Draw(t, "time"))
		addc("SequenceNumber", prop.SampledFrom([]string{`"100"`, `"200"`, `null`, `2`}).Draw(t, "seq"))
		addc("SizeBytes", prop.SampledFrom([]string{"10", "1.5", "null", `"1"`, "-3"}).Draw(t, "size"))
		addc("StreamViewType", `"NEW_AND_OLD_IMAGES"`)
		for _, img := range []string{"Keys", "NewImage", "OldImage"} {
			if prop.IntRange(0, 3).Draw(t, "has "+img) > 0 {
				addc(img, image())
			}
		}
		if prop.IntRange(0, 5).Draw(t, "dup image") == 0 {
			addc("NewImage", image())
		}
		add("dynamodb", prop.OneOf(prop.Just("{"+strings.Join(change, ",")+"}"), prop.SampledFrom([]string{"null", "[]"})).Draw(t, "change"))
		return "{" + strings.Join(members, ",") + "}"
	}
	b.WriteString(`{"Records":[`)
	n := prop.IntRange(0, 4).Draw(t, "records")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(record())
	}
	b.WriteString("]")
	if prop.IntRange(0, 9).Draw(t, "second Records") == 0 {
		b.WriteString(`,"records":[` + record() + `]`)
	}
	b.WriteString("}")
	return []byte(b.String())
}

func TestDecodeEventMatchesAWSLambdaGoGenerated(t *testing.T) {
	prop.Check(t, func(t *prop.T) { sameAsReference(t, genPayload(t)) })
}

// FuzzDecodeEvent: for any bytes, Decode does not panic and agrees
// with aws-lambda-go (make fuzz runs it).
func FuzzDecodeEvent(f *testing.F) {
	for _, p := range fixtures(f) {
		f.Add(p)
	}
	for _, p := range edgeCases {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		sameAsReference(t, payload)
		_ = Source(payload) // never panics, whatever the payload
	})
}

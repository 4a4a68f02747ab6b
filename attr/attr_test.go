package attr_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dynastream/dynastream/attr"
)

// exportAll lets cmp look into events.DynamoDBAttributeValue (unexported
// value/dataType) and the SDK members (unexported noSmithyDocumentSerde). It
// keeps the default nil-versus-empty distinction, so comparisons are exact.
var exportAll = cmp.Exporter(func(reflect.Type) bool { return true })

// SDK dynamodb value constructors, to keep expected values readable.
func s(v string) types.AttributeValue     { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue     { return &types.AttributeValueMemberN{Value: v} }
func bin(v []byte) types.AttributeValue   { return &types.AttributeValueMemberB{Value: v} }
func boolean(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }
func null() types.AttributeValue          { return &types.AttributeValueMemberNULL{Value: true} }
func ss(v ...string) types.AttributeValue {
	return &types.AttributeValueMemberSS{Value: v}
}
func ns(v ...string) types.AttributeValue {
	return &types.AttributeValueMemberNS{Value: v}
}
func bs(v ...[]byte) types.AttributeValue {
	return &types.AttributeValueMemberBS{Value: v}
}
func l(v ...types.AttributeValue) types.AttributeValue {
	if v == nil {
		v = []types.AttributeValue{}
	}
	return &types.AttributeValueMemberL{Value: v}
}
func m(v map[string]types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: v}
}

type item = map[string]types.AttributeValue

// valueCases pairs DynamoDB JSON (decoded by aws-lambda-go's own decoder, an
// implementation independent of this package) with the SDK value it means.
var valueCases = []struct {
	name string
	json string
	sdk  types.AttributeValue
}{
	{"S", `{"S":"ROOM#r1"}`, s("ROOM#r1")},
	{"S empty", `{"S":""}`, s("")},
	{"S unicode", `{"S":"Neukölln \ud83d\ude80 \"quoted\""}`, s("Neukölln 🚀 \"quoted\"")},
	{"N integer", `{"N":"42"}`, n("42")},
	{"N negative", `{"N":"-7"}`, n("-7")},
	{"N 38 digits", `{"N":"12345678901234567890.123456789012345678"}`, n("12345678901234567890.123456789012345678")},
	{"N trailing zero kept", `{"N":"1450.50"}`, n("1450.50")},
	{"N tiny", `{"N":"-0.000001"}`, n("-0.000001")},
	{"N exponent", `{"N":"1E+125"}`, n("1E+125")},
	{"B", `{"B":"AAH+/w=="}`, bin([]byte{0x00, 0x01, 0xfe, 0xff})},
	{"B empty", `{"B":""}`, bin([]byte{})},
	{"BOOL true", `{"BOOL":true}`, boolean(true)},
	{"BOOL false", `{"BOOL":false}`, boolean(false)},
	{"NULL", `{"NULL":true}`, null()},
	{"SS", `{"SS":["balcony","elevator"]}`, ss("balcony", "elevator")},
	{"NS", `{"NS":["-7","1","2.5","12345678901234567890.1"]}`, ns("-7", "1", "2.5", "12345678901234567890.1")},
	{"BS", `{"BS":["3q2+7w==","azE="]}`, bs([]byte{0xde, 0xad, 0xbe, 0xef}, []byte("k1"))},
	{"M empty", `{"M":{}}`, m(item{})},
	{"L empty", `{"L":[]}`, l()},
	{"M flat", `{"M":{"maxMembers":{"N":"100"},"combineMode":{"S":"mixed"}}}`, m(item{"maxMembers": n("100"), "combineMode": s("mixed")})},
	{"L mixed", `{"L":[{"S":"USER#u1"},{"N":"2"},{"NULL":true},{"BOOL":false}]}`, l(s("USER#u1"), n("2"), null(), boolean(false))},
	{
		"nested all ten types",
		`{"M":{
			"s":{"S":""},"n":{"N":"0.5"},"b":{"B":"aGk="},"bool":{"BOOL":true},"null":{"NULL":true},
			"ss":{"SS":["u1"]},"ns":{"NS":["10","20"]},"bs":{"BS":["AQ=="]},
			"empty":{"M":{}},
			"l":{"L":[
				{"L":[]},
				{"M":{"deep":{"L":[{"M":{"deeper":{"L":[{"S":"bottom"},{"NS":["1"]},{"BS":["AQI="]},{"SS":["x"]}]}}}]}}},
				{"L":[{"B":"AQ=="},{"N":"3"},{"NULL":true}]}
			]}
		}}`,
		m(item{
			"s": s(""), "n": n("0.5"), "b": bin([]byte("hi")), "bool": boolean(true), "null": null(),
			"ss": ss("u1"), "ns": ns("10", "20"), "bs": bs([]byte{1}),
			"empty": m(item{}),
			"l": l(
				l(),
				m(item{"deep": l(m(item{"deeper": l(s("bottom"), ns("1"), bs([]byte{1, 2}), ss("x"))}))}),
				l(bin([]byte{1}), n("3"), null()),
			),
		}),
	},
}

func decodeLambda(t *testing.T, js string) events.DynamoDBAttributeValue {
	t.Helper()
	var v events.DynamoDBAttributeValue
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("aws-lambda-go cannot decode %s: %v", js, err)
	}
	return v
}

// jsonValue decodes JSON into generic values for order-insensitive comparison.
func jsonValue(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range valueCases {
		t.Run(tc.name, func(t *testing.T) {
			lam := decodeLambda(t, tc.json)

			// lambda → sdk is exactly the expected value.
			got, err := attr.FromLambda(lam)
			if err != nil {
				t.Fatalf("FromLambda: %v", err)
			}
			if diff := cmp.Diff(tc.sdk, got, exportAll); diff != "" {
				t.Errorf("FromLambda mismatch (-want +got):\n%s", diff)
			}

			// sdk → lambda is exactly what aws-lambda-go decodes from the JSON.
			gotLam, err := attr.ToLambda(tc.sdk)
			if err != nil {
				t.Fatalf("ToLambda: %v", err)
			}
			if diff := cmp.Diff(lam, gotLam, exportAll); diff != "" {
				t.Errorf("ToLambda mismatch (-want +got):\n%s", diff)
			}
			// ... and marshals back to the same DynamoDB JSON.
			out, err := json.Marshal(gotLam)
			if err != nil {
				t.Fatalf("marshal lambda value: %v", err)
			}
			if diff := cmp.Diff(jsonValue(t, []byte(tc.json)), jsonValue(t, out)); diff != "" {
				t.Errorf("lambda JSON mismatch (-want +got):\n%s", diff)
			}

			// lambda → sdk → lambda.
			back, err := attr.ToLambda(got)
			if err != nil {
				t.Fatalf("ToLambda(FromLambda): %v", err)
			}
			if diff := cmp.Diff(lam, back, exportAll); diff != "" {
				t.Errorf("lambda→sdk→lambda mismatch (-want +got):\n%s", diff)
			}

			// sdk → lambda → sdk.
			again, err := attr.FromLambda(gotLam)
			if err != nil {
				t.Fatalf("FromLambda(ToLambda): %v", err)
			}
			if diff := cmp.Diff(tc.sdk, again, exportAll); diff != "" {
				t.Errorf("sdk→lambda→sdk mismatch (-want +got):\n%s", diff)
			}

			// sdk → streams → sdk.
			st, err := attr.ToStreams(tc.sdk)
			if err != nil {
				t.Fatalf("ToStreams: %v", err)
			}
			fromSt, err := attr.FromStreams(st)
			if err != nil {
				t.Fatalf("FromStreams: %v", err)
			}
			if diff := cmp.Diff(tc.sdk, fromSt, exportAll); diff != "" {
				t.Errorf("sdk→streams→sdk mismatch (-want +got):\n%s", diff)
			}
			// The SDK's own streams→dynamodb converter agrees on what ToStreams produced.
			oracle, err := attributevalue.FromDynamoDBStreams(st)
			if err != nil {
				t.Fatalf("attributevalue.FromDynamoDBStreams: %v", err)
			}
			if diff := cmp.Diff(tc.sdk, oracle, exportAll); diff != "" {
				t.Errorf("ToStreams disagrees with attributevalue.FromDynamoDBStreams (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRoundTripNilCollections checks that nil (as opposed to empty) byte
// slices, sets, lists and maps stay nil in every direction.
func TestRoundTripNilCollections(t *testing.T) {
	cases := []struct {
		name string
		sdk  types.AttributeValue
	}{
		{"B nil", &types.AttributeValueMemberB{}},
		{"SS nil", &types.AttributeValueMemberSS{}},
		{"NS nil", &types.AttributeValueMemberNS{}},
		{"BS nil", &types.AttributeValueMemberBS{}},
		{"L nil", &types.AttributeValueMemberL{}},
		{"M nil", &types.AttributeValueMemberM{}},
		{"nested nil", m(item{"l": &types.AttributeValueMemberL{}, "m": &types.AttributeValueMemberM{}, "bs": bs(nil, []byte{})})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lam, err := attr.ToLambda(tc.sdk)
			if err != nil {
				t.Fatalf("ToLambda: %v", err)
			}
			got, err := attr.FromLambda(lam)
			if err != nil {
				t.Fatalf("FromLambda: %v", err)
			}
			if diff := cmp.Diff(tc.sdk, got, exportAll); diff != "" {
				t.Errorf("sdk→lambda→sdk mismatch (-want +got):\n%s", diff)
			}
			st, err := attr.ToStreams(tc.sdk)
			if err != nil {
				t.Fatalf("ToStreams: %v", err)
			}
			got, err = attr.FromStreams(st)
			if err != nil {
				t.Fatalf("FromStreams: %v", err)
			}
			if diff := cmp.Diff(tc.sdk, got, exportAll); diff != "" {
				t.Errorf("sdk→streams→sdk mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaps(t *testing.T) {
	t.Run("nil in, nil out", func(t *testing.T) {
		if got, err := attr.FromLambdaMap(nil); err != nil || got != nil {
			t.Errorf("FromLambdaMap(nil) = %v, %v; want nil, nil", got, err)
		}
		if got, err := attr.ToLambdaMap(nil); err != nil || got != nil {
			t.Errorf("ToLambdaMap(nil) = %v, %v; want nil, nil", got, err)
		}
		if got, err := attr.FromStreamsMap(nil); err != nil || got != nil {
			t.Errorf("FromStreamsMap(nil) = %v, %v; want nil, nil", got, err)
		}
		if got, err := attr.ToStreamsMap(nil); err != nil || got != nil {
			t.Errorf("ToStreamsMap(nil) = %v, %v; want nil, nil", got, err)
		}
	})
	t.Run("empty in, empty out", func(t *testing.T) {
		if got, err := attr.FromLambdaMap(map[string]events.DynamoDBAttributeValue{}); err != nil || got == nil || len(got) != 0 {
			t.Errorf("FromLambdaMap({}) = %#v, %v; want empty non-nil", got, err)
		}
		if got, err := attr.ToLambdaMap(item{}); err != nil || got == nil || len(got) != 0 {
			t.Errorf("ToLambdaMap({}) = %#v, %v; want empty non-nil", got, err)
		}
		if got, err := attr.FromStreamsMap(map[string]streamtypes.AttributeValue{}); err != nil || got == nil || len(got) != 0 {
			t.Errorf("FromStreamsMap({}) = %#v, %v; want empty non-nil", got, err)
		}
		if got, err := attr.ToStreamsMap(item{}); err != nil || got == nil || len(got) != 0 {
			t.Errorf("ToStreamsMap({}) = %#v, %v; want empty non-nil", got, err)
		}
	})
	t.Run("item round-trips", func(t *testing.T) {
		want := benchImage()
		lam, err := attr.ToLambdaMap(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := attr.FromLambdaMap(lam)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, exportAll); diff != "" {
			t.Errorf("sdk→lambda→sdk mismatch (-want +got):\n%s", diff)
		}
		st, err := attr.ToStreamsMap(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err = attr.FromStreamsMap(st)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got, exportAll); diff != "" {
			t.Errorf("sdk→streams→sdk mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestErrors(t *testing.T) {
	unknown := &types.UnknownUnionMember{Tag: "X", Value: []byte(`{"X":1}`)}
	streamsUnknown := &streamtypes.UnknownUnionMember{Tag: "X"}
	tests := []struct {
		name string
		run  func() error
		want string
	}{
		{"ToLambda nil", func() error { _, err := attr.ToLambda(nil); return err }, `attr: nil attribute value`},
		{"ToStreams nil", func() error { _, err := attr.ToStreams(nil); return err }, `attr: nil attribute value`},
		{"FromStreams nil", func() error { _, err := attr.FromStreams(nil); return err }, `attr: nil attribute value`},
		{"FromLambda zero value", func() error { _, err := attr.FromLambda(events.DynamoDBAttributeValue{}); return err },
			`attr: zero events.DynamoDBAttributeValue (no type set)`},
		{"ToLambda typed nil", func() error { _, err := attr.ToLambda((*types.AttributeValueMemberS)(nil)); return err },
			`attr: nil *types.AttributeValueMemberS attribute value`},
		{"ToStreams typed nil", func() error { _, err := attr.ToStreams((*types.AttributeValueMemberM)(nil)); return err },
			`attr: nil *types.AttributeValueMemberM attribute value`},
		{"FromStreams typed nil", func() error { _, err := attr.FromStreams((*streamtypes.AttributeValueMemberL)(nil)); return err },
			`attr: nil *types.AttributeValueMemberL attribute value`},
		{"ToLambda unknown member", func() error { _, err := attr.ToLambda(unknown); return err },
			`attr: unsupported attribute value type *types.UnknownUnionMember (tag "X")`},
		{"ToStreams unknown member", func() error { _, err := attr.ToStreams(unknown); return err },
			`attr: unsupported attribute value type *types.UnknownUnionMember (tag "X")`},
		{"FromStreams unknown member", func() error { _, err := attr.FromStreams(streamsUnknown); return err },
			`attr: unsupported attribute value type *types.UnknownUnionMember (tag "X")`},
		{"ToLambda NULL false", func() error { _, err := attr.ToLambda(&types.AttributeValueMemberNULL{}); return err },
			`attr: NULL attribute value with Value false cannot be represented`},
		{"ToLambda list index", func() error { _, err := attr.ToLambda(l(s("a"), nil)); return err },
			`attr: "[1]": nil attribute value`},
		{"ToLambdaMap nested", func() error {
			_, err := attr.ToLambdaMap(item{"a": m(item{"b": l(s("x"), s("y"), nil)})})
			return err
		}, `attr: "a.b[2]": nil attribute value`},
		{"ToStreamsMap nested", func() error {
			_, err := attr.ToStreamsMap(item{"a": m(item{"b": l(s("x"), s("y"), unknown)})})
			return err
		}, `attr: "a.b[2]": unsupported attribute value type *types.UnknownUnionMember (tag "X")`},
		{"FromStreamsMap nested", func() error {
			_, err := attr.FromStreamsMap(map[string]streamtypes.AttributeValue{
				"a": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
					"b": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{nil}},
				}},
			})
			return err
		}, `attr: "a.b[0]": nil attribute value`},
		{"FromLambdaMap nested zero value", func() error {
			_, err := attr.FromLambdaMap(map[string]events.DynamoDBAttributeValue{
				"settings": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
					"mods": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("USER#u1"), {}}),
				}),
			})
			return err
		}, `attr: "settings.mods[1]": zero events.DynamoDBAttributeValue (no type set)`},
		{"LambdaRecord nested", func() error {
			_, err := attr.LambdaRecord(streamtypes.Record{Dynamodb: &streamtypes.StreamRecord{
				Keys: map[string]streamtypes.AttributeValue{"PK": &streamtypes.AttributeValueMemberS{Value: "ROOM#r1"}},
				NewImage: map[string]streamtypes.AttributeValue{
					"settings": &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{
						"mods": &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{streamsUnknown}},
					}},
				},
			}}, "arn")
			return err
		}, `attr: "NewImage.settings.mods[0]": unsupported attribute value type *types.UnknownUnionMember (tag "X")`},
		{"LambdaRecord NULL false", func() error {
			_, err := attr.LambdaRecord(streamtypes.Record{Dynamodb: &streamtypes.StreamRecord{
				OldImage: map[string]streamtypes.AttributeValue{"gone": &streamtypes.AttributeValueMemberNULL{}},
			}}, "arn")
			return err
		}, `attr: "OldImage.gone": NULL attribute value with Value false cannot be represented`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatalf("got no error, want %q", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("error = %q, want %q", err.Error(), tc.want)
			}
		})
	}
}

func TestLambdaRecordMinimal(t *testing.T) {
	got, err := attr.LambdaRecord(streamtypes.Record{}, "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x")
	if err != nil {
		t.Fatal(err)
	}
	want := events.DynamoDBEventRecord{
		EventSource:    "aws:dynamodb",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x",
	}
	if diff := cmp.Diff(want, got, exportAll); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

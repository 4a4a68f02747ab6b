package stream_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynastream/dynastream/stream"
)

type lineItem struct {
	SKU string `dynamodbav:"sku"`
	Qty int    `dynamodbav:"qty"`
}

type order struct {
	ID    string     `dynamodbav:"orderId"`
	Price int        `dynamodbav:"price"`
	Items []lineItem `dynamodbav:"items"`
	Note  string
}

func orderRecord(name string, old, new map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: "ev-" + strings.ToLower(name), EventName: name, Change: events.DynamoDBStreamRecord{
		SequenceNumber: "1", Keys: map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ORDER#1")},
		OldImage: old, NewImage: new}}
}

func orderImage(price string, qty ...events.DynamoDBAttributeValue) map[string]events.DynamoDBAttributeValue {
	items := make([]events.DynamoDBAttributeValue, len(qty))
	for i, q := range qty {
		items[i] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"sku": events.NewStringAttribute("s"), "qty": q})
	}
	return map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ORDER#1"), "orderId": events.NewStringAttribute("1"),
		"price": events.NewNumberAttribute(price), "items": events.NewListAttribute(items), "Note": events.NewStringAttribute("n")}
}

// An image the change does not have is an error that says which, not a
// zero value.
func TestDecodeAnAbsentImage(t *testing.T) {
	c, err := stream.Decode(orderRecord("REMOVE", orderImage("5"), nil))
	if err != nil {
		t.Fatal(err)
	}
	var o order
	err = c.DecodeNew(&o)
	if !errors.Is(err, stream.ErrNoImage) || !strings.Contains(err.Error(), "ev-remove (REMOVE) has no new image") {
		t.Fatalf("DecodeNew of a removal: %v", err)
	}
	if err := c.DecodeOld(&o); err != nil || o.Price != 5 || o.Note != "n" {
		t.Fatalf("DecodeOld: %+v %v", o, err)
	}
	c, _ = stream.Decode(orderRecord("INSERT", nil, orderImage("5")))
	if err := c.DecodeOld(&o); !errors.Is(err, stream.ErrNoImage) || !strings.Contains(err.Error(), "no old image") {
		t.Fatalf("DecodeOld of an insert: %v", err)
	}
}

// A record's keys are the record's, whether or not its image holds the
// same values: taken from the image when it does (one conversion), from
// the record when it does not or has no image. AWS: a StreamRecord's Keys
// are "the primary key attribute(s) for the DynamoDB item that was
// modified", its images the whole item before and after
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_streams_StreamRecord.html),
// and a KEYS_ONLY stream writes only the key attributes
// (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_StreamSpecification.html).
func TestDecodeKeys(t *testing.T) {
	c, err := stream.Decode(orderRecord("INSERT", nil, orderImage("5")))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.Keys["PK"].(*types.AttributeValueMemberS); !ok || got.Value != "ORDER#1" || got != c.New["PK"] || len(c.Keys) != 1 {
		t.Fatalf("keys of an insert: %#v", c.Keys)
	}
	other := orderRecord("MODIFY", orderImage("5"), orderImage("6"))
	other.Change.Keys = map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("ORDER#2"), "n": events.NewNumberAttribute("7")}
	keysOnly := orderRecord("REMOVE", nil, nil)
	keysOnly.Change.Keys["n"] = events.NewNumberAttribute("7")
	for _, rec := range []events.DynamoDBEventRecord{other, keysOnly} {
		c, err := stream.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		pk, _ := c.Keys["PK"].(*types.AttributeValueMemberS)
		n, _ := c.Keys["n"].(*types.AttributeValueMemberN)
		if pk == nil || pk.Value != rec.Change.Keys["PK"].String() || n == nil || n.Value != "7" || len(c.Keys) != 2 {
			t.Fatalf("keys of %s: %#v", rec.EventName, c.Keys)
		}
	}
}

// A decoding error names the attribute, by its path.
func TestDecodeErrorsNameTheAttribute(t *testing.T) {
	for want, img := range map[string]map[string]events.DynamoDBAttributeValue{
		"attribute price":        orderImage("1.5"),
		"attribute items[1].qty": orderImage("5", events.NewNumberAttribute("1"), events.NewStringAttribute("many")),
		"attribute orderId": func() map[string]events.DynamoDBAttributeValue {
			m := orderImage("5")
			m["orderId"] = events.NewBooleanAttribute(true)
			return m
		}(),
	} {
		c, err := stream.Decode(orderRecord("INSERT", nil, img))
		if err != nil {
			t.Fatal(err)
		}
		var o order
		if err := c.DecodeNew(&o); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ev-insert") {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// Images gives the typed pair: nil where the change has no such image.
func TestImages(t *testing.T) {
	for _, c := range []struct {
		name             string
		old, new         map[string]events.DynamoDBAttributeValue
		wantOld, wantNew int // the price; -1: nil
	}{
		{"INSERT", nil, orderImage("5"), -1, 5},
		{"MODIFY", orderImage("5"), orderImage("7"), 5, 7},
		{"REMOVE", orderImage("7"), nil, 7, -1},
	} {
		ch, err := stream.Decode(orderRecord(c.name, c.old, c.new))
		if err != nil {
			t.Fatal(err)
		}
		before, after, err := stream.Images[order](ch)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		price := func(o *order) int {
			if o == nil {
				return -1
			}
			return o.Price
		}
		if price(before) != c.wantOld || price(after) != c.wantNew {
			t.Errorf("%s: before %+v, after %+v", c.name, before, after)
		}
	}
	ch, _ := stream.Decode(orderRecord("MODIFY", orderImage("5"), orderImage("x5")))
	if _, _, err := stream.Images[order](ch); err == nil || !strings.Contains(err.Error(), "new image: attribute price") {
		t.Errorf("a bad new image: %v", err)
	}
}

// Node embeds itself: finding the failing attribute must not recurse
// forever.
type Node struct {
	*Node
	V    int `dynamodbav:"v"`
	Deep inner
}

type inner struct{ W int }

func TestDecodeErrorPathOfARecursiveType(t *testing.T) {
	img := map[string]events.DynamoDBAttributeValue{"PK": events.NewStringAttribute("N"), "v": events.NewStringAttribute("x")}
	c, err := stream.Decode(orderRecord("INSERT", nil, img))
	if err != nil {
		t.Fatal(err)
	}
	var n Node
	if err := c.DecodeNew(&n); err == nil || !strings.Contains(err.Error(), "attribute v:") {
		t.Errorf("Node: %v", err)
	}
}

package ddb

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB Local does not count a transaction's capacity as AWS bills it
// (measured: a transaction of one small put is 2 write units there, and
// so is one of three; AWS bills 2 and 6). So a Counter with Capacity
// prices each TransactWriteItems itself, at AWS's rates, and takes every
// other call's units as reported.
//
// txWriteUnits is AWS's write units for a TransactWriteItems, as
// txKeyUses prices its items (keys.go).
func txWriteUnits(in *dynamodb.TransactWriteItemsInput, indexes []Index) float64 {
	var units float64
	for _, u := range txKeyUses(in, indexes, nil) {
		units += u.write
	}
	return units
}

// itemSize is an item's size as DynamoDB counts it: each attribute's name
// and value (strings in UTF-8 bytes, numbers about a byte per two digits,
// sets and documents their elements and a few bytes of overhead).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return sizeOf(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sizeOf(v.Value, numberSize)
	case *types.AttributeValueMemberBS:
		return sizeOf(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// sizeOf is the size of a set's elements together.
func sizeOf[T any](xs []T, size func(T) int) int {
	n := 0
	for _, x := range xs {
		n += size(x)
	}
	return n
}

// numberSize approximates a number's stored size: about one byte per two
// significant digits, plus one.
func numberSize(s string) int {
	digits := 0
	for _, c := range s {
		if c >= '0' && c <= '9' {
			digits++
		}
	}
	return (digits+1)/2 + 1
}

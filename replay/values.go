package replay

import (
	"bytes"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Number is a DynamoDB number as exact decimal text in one canonical
// spelling: no exponent, no leading or trailing zeros, no "+", and "0" for
// every zero ("1.50", "15e-1" and "0.15E1" are all "1.5"). Two Numbers are
// equal exactly when the numbers are, to all of DynamoDB's 38 digits — a
// float64 keeps about 16, so 1795438980123456789 and 1795438980123456788
// would be the same float64.
type Number string

// ParseNumber reads a number as DynamoDB writes it (an optional sign,
// digits with an optional fraction, an optional exponent) and returns its
// canonical spelling.
func ParseNumber(s string) (Number, error) {
	t := strings.TrimSpace(s)
	mant, exp := t, ""
	if i := strings.IndexAny(t, "eE"); i >= 0 {
		mant, exp = t[:i], t[i+1:]
	}
	neg := false
	if mant != "" && (mant[0] == '-' || mant[0] == '+') {
		neg = mant[0] == '-'
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart+frac == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", fmt.Errorf("replay: %q is not a number", s)
	}
	e := 0
	if strings.ContainsAny(t, "eE") {
		var err error
		if e, err = strconv.Atoi(exp); err != nil || !validExponent(exp) {
			return "", fmt.Errorf("replay: %q is not a number", s)
		}
		if e > 1000 || e < -1000 {
			return "", fmt.Errorf("replay: %q is out of DynamoDB's range", s)
		}
	}
	// value = 0.digits × 10^point, digits without leading or trailing zeros
	digits := strings.TrimLeft(intPart+frac, "0")
	point := len(intPart) + e - (len(intPart+frac) - len(digits))
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		return "0", nil
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	switch {
	case point <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -point))
		b.WriteString(digits)
	case point >= len(digits):
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", point-len(digits)))
	default:
		b.WriteString(digits[:point])
		b.WriteByte('.')
		b.WriteString(digits[point:])
	}
	return Number(b.String()), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func validExponent(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return s != "" && allDigits(s)
}

// Rat returns the number's exact value.
func (n Number) Rat() *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return new(big.Rat)
	}
	return r
}

// Values returns an item as plain Go values that compare exactly with
// go-cmp (or ==, for scalars): S is string, N is Number, B is []byte, BOOL
// is bool, NULL is nil, L is []any, M is map[string]any, and the sets are
// sorted slices — SS []string, NS []Number (by value), BS [][]byte — since
// a set has no order. Use it in a Target's State for items of your own;
// attributevalue.UnmarshalMap into map[string]any would turn numbers into
// float64 and let two different states compare equal.
func Values(item map[string]types.AttributeValue) (map[string]any, error) {
	out := make(map[string]any, len(item))
	for k, v := range item {
		p, err := Value(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = p
	}
	return out, nil
}

// Value is Values for one attribute value.
func Value(av types.AttributeValue) (any, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberN:
		return ParseNumber(v.Value)
	case *types.AttributeValueMemberB:
		return v.Value, nil
	case *types.AttributeValueMemberBOOL:
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return nil, nil
	case *types.AttributeValueMemberSS:
		return slices.Sorted(slices.Values(v.Value)), nil
	case *types.AttributeValueMemberNS:
		ns := make([]Number, len(v.Value))
		for i, s := range v.Value {
			n, err := ParseNumber(s)
			if err != nil {
				return nil, err
			}
			ns[i] = n
		}
		slices.SortFunc(ns, func(a, b Number) int { return a.Rat().Cmp(b.Rat()) })
		return ns, nil
	case *types.AttributeValueMemberBS:
		bs := slices.Clone(v.Value)
		slices.SortFunc(bs, bytes.Compare)
		return bs, nil
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, e := range v.Value {
			p, err := Value(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = p
		}
		return l, nil
	case *types.AttributeValueMemberM:
		return Values(v.Value)
	case nil:
		return nil, fmt.Errorf("replay: missing attribute value")
	default:
		return nil, fmt.Errorf("replay: attribute value of type %T", av)
	}
}

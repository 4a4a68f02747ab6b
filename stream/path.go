package stream

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// failingPath finds where an attribute value does not fit the Go type t
// that it failed to unmarshal into: ".price", ".items[2].price", as deep
// as t says what a member must be; "" when no one member is to blame.
func failingPath(av types.AttributeValue, t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	switch v := av.(type) {
	case *types.AttributeValueMemberM:
		for _, name := range slices.Sorted(maps.Keys(v.Value)) {
			mt, ok := memberType(t, name)
			if ok && !fits(v.Value[name], mt) {
				return "." + name + failingPath(v.Value[name], mt)
			}
		}
	case *types.AttributeValueMemberL:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return ""
		}
		for i, e := range v.Value {
			if !fits(e, t.Elem()) {
				return fmt.Sprintf("[%d]", i) + failingPath(e, t.Elem())
			}
		}
	}
	return ""
}

// fits reports whether av unmarshals into a value of type t.
func fits(av types.AttributeValue, t reflect.Type) bool {
	return attributevalue.Unmarshal(av, reflect.New(t).Interface()) == nil
}

// memberType is the type the member name of a map attribute goes into, in
// t: a map's element type, or a struct field's (by its dynamodbav tag, or
// its name), looked for breadth first through embedded structs as
// attributevalue does (the shallowest wins; a type embedding itself is
// visited once); false when t takes no such member.
func memberType(t reflect.Type, name string) (reflect.Type, bool) {
	switch t.Kind() {
	case reflect.Map:
		return t.Elem(), true
	case reflect.Interface:
		return t, true
	case reflect.Struct:
	default:
		return nil, false
	}
	seen := map[reflect.Type]bool{}
	for level := []reflect.Type{t}; len(level) > 0; {
		var next []reflect.Type
		var fold reflect.Type
		for _, st := range level {
			if seen[st] {
				continue
			}
			seen[st] = true
			for i := range st.NumField() {
				f := st.Field(i)
				tag, _, _ := strings.Cut(f.Tag.Get("dynamodbav"), ",")
				if tag == "-" {
					continue
				}
				if f.Anonymous && tag == "" {
					ft := f.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, ft)
						continue
					}
				}
				if !f.IsExported() {
					continue
				}
				n := f.Name
				if tag != "" {
					n = tag
				}
				if n == name {
					return f.Type, true
				}
				if fold == nil && strings.EqualFold(n, name) {
					fold = f.Type
				}
			}
		}
		if fold != nil {
			return fold, true
		}
		level = next
	}
	return nil, false
}

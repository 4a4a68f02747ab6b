package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Sources, one per domain.
const (
	SourceRooms         = "dynastream.rooms"
	SourceCollaboration = "dynastream.collaboration"
	SourceLocations     = "dynastream.locations"
	SourceUsers         = "dynastream.users"
)

// Definition is one event type of the public contract.
type Definition struct {
	Name    string // EventBridge DetailType
	Source  string
	Version int
	Doc     string
	// Example is a value of the event's data type (also its schema).
	Example any
}

var (
	definitions []Definition
	byType      = map[string]Definition{}
	// idFields are, by type, the fields Map requires (requiredIDs).
	idFields = map[string][]idField{}
)

// define adds an event type to the catalogue (at init).
func define(d Definition) {
	d.Version = max(d.Version, 1)
	definitions = append(definitions, d)
	byType[typeName(d.Example)] = d
	idFields[typeName(d.Example)] = requiredIDs(reflect.TypeOf(d.Example))
}

// idField is a string field of event data that must not be empty.
type idField struct {
	index int
	name  string // its JSON name
}

// requiredIDs lists a data type's identifiers: its string fields named
// …Id in JSON that are not optional (omitempty).
func requiredIDs(t reflect.Type) []idField {
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []idField
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.String && strings.HasSuffix(name, "Id") && !strings.Contains(opts, "omitempty") {
			out = append(out, idField{i, name})
		}
	}
	return out
}

func typeName(v any) string { return reflect.TypeOf(v).String() }

// Catalogue returns every event type, by source then name.
func Catalogue() []Definition {
	out := append([]Definition(nil), definitions...)
	sortDefinitions(out)
	return out
}

func sortDefinitions(ds []Definition) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && less(ds[j], ds[j-1]); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

func less(a, b Definition) bool {
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	return a.Name < b.Name
}

// Schema returns the JSON Schema (draft 2020-12) of a definition's data.
func (d Definition) Schema() map[string]any {
	s := schemaOf(reflect.TypeOf(d.Example))
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = d.Name
	return s
}

func schemaOf(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64, reflect.Int32:
		return map[string]any{"type": "integer"}
	case reflect.Float64, reflect.Float32:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Tag.Get("json") == "" { // embedded: its fields are inlined
				inner := schemaOf(f.Type)
				for k, v := range inner["properties"].(map[string]any) {
					props[k] = v
				}
				if r, ok := inner["required"].([]string); ok {
					required = append(required, r...)
				}
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			p := schemaOf(f.Type)
			if doc := f.Tag.Get("doc"); doc != "" {
				p["description"] = doc
			}
			props[name] = p
			if !strings.Contains(opts, "omitempty") {
				required = append(required, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	panic(fmt.Sprintf("events: no schema for %s", t))
}

// Markdown renders the catalogue document (docs/events.md): generated from
// these types, so it cannot drift from the code.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# Domain event catalogue\n\n")
	b.WriteString("Generated from `internal/events` by `go test ./internal/events -run TestCatalogueDocument -update`; do not edit.\n\n")
	b.WriteString("Every event is published to the EventBridge bus with `Source` and `DetailType` as below and this `Detail`:\n\n")
	b.WriteString("```json\n{\"id\": \"<stream eventID>-<n>\", \"occurredAt\": \"2026-01-02T15:04:05.000Z\", \"version\": 1, \"sequenceNumber\": \"<stream sequence number>\", \"changedAt\": \"2026-01-02T15:04:05.123456Z\", \"data\": { … }}\n```\n\n")
	b.WriteString("`id` is deterministic (a redelivered change yields the same id: dedupe on it); `version` is the version of `data`'s schema. On a DynamoDB stream, `sequenceNumber` orders the events of one item. On a Kinesis data stream for DynamoDB, which may repeat a change and deliver one item's changes out of order, `sequenceNumber` is the Kinesis record's (a repeat has another) and `changedAt`, the change's creation time to the microsecond, orders them, as AWS advises (DynamoDB Developer Guide, *Change data capture for Kinesis Data Streams with DynamoDB*).\n\n")
	src := ""
	for _, d := range Catalogue() {
		if d.Source != src {
			src = d.Source
			fmt.Fprintf(&b, "## %s\n\n", src)
		}
		fmt.Fprintf(&b, "### %s (version %d)\n\n%s\n\n", d.Name, d.Version, d.Doc)
		schema, _ := json.MarshalIndent(d.Schema(), "", "  ")
		example, _ := json.MarshalIndent(d.Example, "", "  ")
		fmt.Fprintf(&b, "Schema of `data`:\n\n```json\n%s\n```\n\nExample `data`:\n\n```json\n%s\n```\n\n", schema, example)
	}
	return b.String()
}

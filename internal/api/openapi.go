package api

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/dynastream/dynastream/internal/errs"
	"github.com/dynastream/dynastream/internal/text"
)

func (s *Server) openapiYAML(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiYAML())
	return nil
}

func (s *Server) openapiJSON(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiJSON())
	return nil
}

// validate checks r against its operation in openapi.yaml, after its
// route's access (authorize): a caller who may not use the room, the
// resource or the route gets that answer (404 for what they may not see,
// 403 for what they may see but not do), whatever the input; only an id in
// the path that breaks its pattern is a 400 first, as it can name no item
// (saying so reveals nothing, and looking it up would send DynamoDB a key
// it refuses). The body stays readable for the handler. It returns the
// request with what authorize found.
func (s *Server) validate(r *http.Request, rt route, op *operation) (*http.Request, error) {
	err := validateRequest(r, op)
	if err != nil && badPathID(op, err) {
		return r, err
	}
	r, aerr := s.authorize(r, rt.access)
	if aerr != nil {
		return r, aerr
	}
	return r, err
}

// pathIDs returns the names of an operation's path parameters that are
// ids (schemas Id and UserId).
func pathIDs(op *operation) map[string]bool {
	out := map[string]bool{}
	for _, p := range op.Parameters {
		if p.In != "path" {
			continue
		}
		if ref := p.Schema.Ref; ref == schemaRefs+"Id" || ref == schemaRefs+"UserId" {
			out[p.Name] = true
		}
	}
	return out
}

// badPathID reports whether a validation error names an id in the path.
func badPathID(op *operation, err error) bool {
	var e *errs.Error
	if !errors.As(err, &e) {
		return false
	}
	ids := pathIDs(op)
	for _, f := range e.Fields {
		if ids[f.Field] {
			return true
		}
	}
	return false
}

// controlChars refuses control characters in what a request carries as
// text: none at all in a query parameter or a single-line string of the
// body (names, titles, criteria, …); in a multi-line one (x-multiline in
// the spec: comment texts, invite messages, descriptions) only line breaks
// and tabs. A terminal, a log or an e-mail header must never receive NUL,
// ESC or a bare CR from a user.
func controlChars(r *http.Request, op *operation, doc any) error {
	var fields []errs.FieldError
	for name, vs := range r.URL.Query() {
		for _, v := range vs {
			if reason := text.Problem(v, false); reason != "" {
				fields = append(fields, errs.FieldError{Field: name, Reason: reason})
				break
			}
		}
	}
	if rb := op.RequestBody; rb != nil && doc != nil {
		if mt := rb.Content["application/json"]; mt != nil && mt.Schema != nil {
			walkText(doc, mt.Schema.resolved(), "", &fields)
		}
	}
	sort.SliceStable(fields, func(i, j int) bool { return fields[i].Field < fields[j].Field })
	return errs.Fields(fields)
}

// walkText checks every string of v against schema s (nil: single-line).
func walkText(v any, s *schema, path string, out *[]errs.FieldError) {
	switch x := v.(type) {
	case string:
		multi := s != nil && s.XMultiline
		if reason := text.Problem(x, multi); reason != "" {
			*out = append(*out, errs.FieldError{Field: strings.TrimPrefix(path, "."), Reason: reason})
		}
	case []any:
		var items *schema
		if s != nil && s.Items != nil {
			items = s.Items.resolved()
		}
		for i, e := range x {
			walkText(e, items, fmt.Sprintf("%s[%d]", path, i), out)
		}
	case map[string]any:
		for k, e := range x {
			var ps *schema
			if s != nil {
				if p := s.Properties[k]; p != nil {
					ps = p.resolved()
				} else if ap := s.AdditionalProperties; ap != nil && ap.Schema != nil {
					ps = ap.Schema.resolved()
				}
			}
			walkText(e, ps, path+"."+k, out)
		}
	}
}

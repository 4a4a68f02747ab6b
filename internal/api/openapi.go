package api

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/dynastream/dynastream/internal/collab"
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

// validate checks r against its operation in openapi.yaml; the body stays
// readable for the handler. An invalid request from a caller who may not use
// the room at all gets the handler's answer instead (404 for a non-member,
// 403 for a member where only the owner may act): the handlers check
// authorization before input, and a room's existence must not show through
// a 400. The same holds for the collaboration routes (collabAccess) and for
// the location routes only admins may call (adminAccess: 403).
func (s *Server) validate(r *http.Request, rt route, op *operation) error {
	err := validateRequest(r, op)
	if err == nil {
		return nil
	}
	// An id in the path that breaks its pattern can name no item: saying
	// so reveals nothing about what exists, and looking it up first would
	// send DynamoDB a key it refuses.
	if badPathID(op, err) {
		return err
	}
	switch rt.access {
	case member:
		if _, aerr := s.member(r); aerr != nil {
			return aerr
		}
	case owner:
		if _, aerr := s.owner(r); aerr != nil {
			return aerr
		}
	case user:
		if aerr := adminAccess(r, rt.pattern); aerr != nil {
			return aerr
		}
		if aerr := s.collabAccess(r, rt.pattern); aerr != nil {
			return aerr
		}
		if aerr := s.recipeAccess(r, rt.pattern); aerr != nil {
			return aerr
		}
	}
	return err
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

// collabAccess gives, for an invalid request on a collaboration route, the
// answer its handler gives before it reads any input: 404 to a caller who
// may not see the resource, invite or comment of the path, 403 to one who
// sees it where only the owner, the invitee or the author may act (the
// handlers' messages). Other routes, and a path whose resource type is
// invalid (the validation error names type), pass.
func (s *Server) collabAccess(r *http.Request, pattern string) error {
	me := identity(r.Context()).UserID
	switch {
	case r.PathValue("commentId") != "":
		c, _, err := s.comment(r)
		switch {
		case err != nil:
			return err
		case pattern == "PATCH /comments/{commentId}" && c.UserID != me:
			return errs.New(errs.Forbidden, "only the author edits a comment")
		case pattern == "DELETE /comments/{commentId}" && c.UserID != me:
			return errs.New(errs.Forbidden, "only the author deletes a comment")
		}
	case r.PathValue("type") == "":
	case !collab.ResourceType(r.PathValue("type")).Valid():
	case r.PathValue("inviteId") != "":
		_, invitee, err := s.invite(r)
		switch {
		case err != nil:
			return err
		case !invitee && (strings.HasSuffix(pattern, "/accept") || strings.HasSuffix(pattern, "/decline")):
			return errs.New(errs.Forbidden, "only the invitee accepts or declines an invite")
		}
	default:
		a, err := s.access(r)
		switch {
		case err != nil:
			return err
		case pattern == "POST /resources/{type}/{id}/invites" && !a.Owner:
			return errs.New(errs.Forbidden, "only the owner invites")
		case pattern == "GET /resources/{type}/{id}/invites" && !a.Owner:
			return errs.New(errs.Forbidden, "only the owner lists a resource's invites")
		}
	}
	return nil
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

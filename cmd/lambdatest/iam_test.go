package lambdatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"
)

// The bootstraps' DynamoDB calls go through a recording proxy (one per
// started function), and each test checks, when it ends, that every call a
// function made is allowed by its role in infra/template.yaml: the action
// IAM authorizes it with (a transaction's items by PutItem, UpdateItem,
// DeleteItem, ConditionCheckItem; TransactGetItems by GetItem) on the
// table, its indexes, the bookkeeping or the effects table. A grant the template lacks
// would be an AccessDenied in AWS; this finds it here.

// roles are the template's roles by program.
var roles = map[string]string{"writer": "WriterRole", "projector": "ProjectorRole", "notifier": "NotifierRole"}

// used is what a function's calls need: "dynamodb:PutItem Table", …
type used struct {
	mu     sync.Mutex
	grants map[string]bool
}

func (u *used) add(g string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.grants[g] = true
}

func (u *used) all() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.grants))
}

// recordDynamoDB points the environment's DYNAMODB_ENDPOINT at a recording
// proxy and checks, when the test ends, that the template grants program
// what it used.
func recordDynamoDB(t *testing.T, program string, environ []string) []string {
	var target, table, bookkeeping, effects string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "DYNAMODB_ENDPOINT":
			target = v
		case "DYNAMODB_TABLE_NAME":
			table = v
		case "BOOKKEEPING_TABLE_NAME":
			bookkeeping = v
		case "EFFECTS_TABLE_NAME":
			effects = v
		}
	}
	if target == "" || roles[program] == "" {
		return environ
	}
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	u := &used{grants: map[string]bool{}}
	resource := func(name, index string) string {
		r := "other table " + name
		switch name {
		case table:
			r = "Table"
		case bookkeeping:
			r = "BookkeepingTable"
		case effects:
			r = "EffectsTable"
		}
		if index != "" {
			r += "/index/*"
		}
		return r
	}
	proxy := httputil.NewSingleHostReverseProxy(to)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // a call the function gave up on (its deadline) is no finding
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		for _, g := range grantsOf(op, body, resource) {
			u.add(g)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { checkGrants(t, program, u.all()) })
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if strings.HasPrefix(kv, "DYNAMODB_ENDPOINT=") {
			kv = "DYNAMODB_ENDPOINT=" + srv.URL
		}
		out = append(out, kv)
	}
	return out
}

// grantsOf says which IAM actions on which resources a DynamoDB request
// needs.
func grantsOf(op string, body []byte, resource func(table, index string) string) []string {
	var req struct {
		TableName     string
		IndexName     string
		RequestItems  map[string]json.RawMessage
		TransactItems []map[string]struct{ TableName string }
	}
	_ = json.Unmarshal(body, &req)
	var out []string
	switch op {
	case "BatchWriteItem", "BatchGetItem":
		for name := range req.RequestItems {
			out = append(out, "dynamodb:"+op+" "+resource(name, ""))
		}
	case "TransactWriteItems", "TransactGetItems":
		actions := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		for _, item := range req.TransactItems {
			for kind, x := range item {
				out = append(out, "dynamodb:"+actions[kind]+" "+resource(x.TableName, ""))
			}
		}
	default:
		out = append(out, "dynamodb:"+op+" "+resource(req.TableName, req.IndexName))
	}
	return out
}

// checkGrants fails the test for each grant program needed that its role
// lacks.
func checkGrants(t *testing.T, program string, needed []string) {
	granted := roleGrants(t, roles[program])
	for _, g := range needed {
		if !granted[g] {
			t.Errorf("%s called DynamoDB with %s, which %s in infra/template.yaml does not grant: AccessDenied in AWS", program, g, roles[program])
		}
	}
	var unused []string
	for g := range granted {
		if strings.HasPrefix(g, "dynamodb:") && !slices.Contains(needed, g) {
			unused = append(unused, g)
		}
	}
	slices.Sort(unused)
	t.Logf("%s: DynamoDB grants used here %v; granted but not exercised by this test %v", program, needed, unused)
}

// roleGrants reads a role's statements from infra/template.yaml as
// "action resource" pairs, a resource written as the logical name it
// refers to (Table, Table/index/*, BookkeepingTable, EffectsTable).
func roleGrants(t *testing.T, role string) map[string]bool {
	b, err := os.ReadFile("../../infra/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := intrinsics.ProcessYAML(b, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	var tmpl struct {
		Resources map[string]struct {
			Properties struct {
				Policies []struct {
					PolicyDocument struct {
						Statement []struct {
							Effect   string
							Action   any
							Resource any
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal(j, &tmpl); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range tmpl.Resources[role].Properties.Policies {
		for _, s := range p.PolicyDocument.Statement {
			if s.Effect != "Allow" {
				continue
			}
			for _, a := range list(s.Action) {
				for _, r := range list(s.Resource) {
					out[fmt.Sprint(a)+" "+resourceName(r)] = true
				}
			}
		}
	}
	return out
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// resourceName renders !GetAtt X.Arn as X and !Sub "${X.Arn}/rest" as
// X/rest; anything else as its JSON.
func resourceName(r any) string {
	if m, ok := r.(map[string]any); ok {
		if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 && ga[1] == "Arn" {
			return fmt.Sprint(ga[0])
		}
		if ga, ok := m["Fn::GetAtt"].(string); ok {
			if name, ok := strings.CutSuffix(ga, ".Arn"); ok {
				return name
			}
		}
		if sub, ok := m["Fn::Sub"].(string); ok {
			if rest, ok := strings.CutPrefix(sub, "${"); ok {
				if name, tail, ok := strings.Cut(rest, ".Arn}"); ok {
					return name + tail
				}
			}
		}
	}
	b, _ := json.Marshal(r)
	return string(b)
}

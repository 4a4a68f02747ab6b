package gatewaytest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// Event reads testdata/<name>.json of internal/gateway ("connect",
// "message", "message-base64", "disconnect") with each {{KEY}} replaced by
// vals[KEY], JSON-escaped: CONN, TOKEN, ROOM, BODY.
func Event(t testing.TB, name string, vals map[string]string) events.APIGatewayWebsocketProxyRequest {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vals {
		q, _ := json.Marshal(v)
		s = strings.ReplaceAll(s, "{{"+k+"}}", string(q[1:len(q)-1]))
	}
	var ev events.APIGatewayWebsocketProxyRequest
	if err := json.Unmarshal([]byte(s), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

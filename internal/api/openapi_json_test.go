package api

import (
	"bytes"
	"compress/gzip"
	"flag"
	"os"
	"testing"

	"github.com/dynastream/dynastream/internal/api/internal/kinref"
)

var update = flag.Bool("update", false, "rewrite openapi.yaml.gz and openapi.json.gz from openapi.yaml")

// openapiSource is openapi.yaml, the source of the embedded documents.
var openapiSource = func() []byte {
	b, err := os.ReadFile("openapi.yaml")
	if err != nil {
		panic(err)
	}
	return b
}()

// TestOpenAPIEmbedded: the embedded documents are openapi.yaml, and
// openapi.yaml as JSON as kin-openapi loads and writes it (validated as an
// OpenAPI document). With -update it writes them.
func TestOpenAPIEmbedded(t *testing.T) {
	spec, err := kinref.Load(openapiSource)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		for name, b := range map[string][]byte{"openapi.yaml.gz": openapiSource, "openapi.json.gz": spec.JSON} {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			_, _ = zw.Write(b)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if !bytes.Equal(openapiYAML(), openapiSource) {
		t.Error("openapi.yaml.gz is not openapi.yaml: run go test ./internal/api -run TestOpenAPIEmbedded -update")
	}
	if !bytes.Equal(openapiJSON(), spec.JSON) {
		t.Error("openapi.json.gz is not openapi.yaml as JSON: run go test ./internal/api -run TestOpenAPIEmbedded -update")
	}
}

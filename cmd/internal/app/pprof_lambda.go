//go:build lambda.norpc

package app

import "net/http"

// profiles: a Lambda bootstrap serves no admin endpoint (pprof_local.go).
func profiles(*http.ServeMux) string { return "" }

package lambdatest

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/awslabs/goformation/v7"

	"github.com/dynastream/dynastream/infra"
	"github.com/dynastream/dynastream/internal/runtimeapi"
)

// checkAlarmedMetrics checks that every alarm of infra/template.yaml on the
// programs' own metrics watches a metric the bootstraps really emit: its
// namespace, name and exactly its dimensions (names and values), so a
// renamed metric or dimension cannot leave an alarm watching nothing.
// fns are the bootstraps that ran, by service name.
func checkAlarmedMetrics(t *testing.T, namespace string, fns map[string]*runtimeapi.Function) {
	t.Helper()
	b, err := os.ReadFile("../../infra/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := goformation.ParseYAML(infra.WithoutNewerProperties(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, a := range tmpl.GetAllCloudWatchAlarmResources() {
		if a.Namespace == nil || *a.Namespace != namespace {
			continue
		}
		n++
		dims := map[string]string{}
		for _, d := range a.Dimensions {
			dims[d.Name] = d.Value
		}
		f := fns[dims["service"]]
		if f == nil {
			t.Errorf("alarm %s: service %q is not a bootstrap tested here (%v)", name, dims["service"], slices.Sorted(maps.Keys(fns)))
			continue
		}
		if !emitted(f.Logs(), namespace, *a.MetricName, dims) {
			t.Errorf("alarm %s watches %s %s %v, which %s never emitted", name, namespace, *a.MetricName, dims, dims["service"])
		}
	}
	if n == 0 {
		t.Errorf("no alarm in infra/template.yaml watches namespace %s", namespace)
	}
}

// emitted reports whether an EMF line among lines has metric in namespace
// with exactly the dimensions dims.
func emitted(lines []string, namespace, metric string, dims map[string]string) bool {
	for _, l := range lines {
		var doc map[string]any
		if json.Unmarshal([]byte(l), &doc) != nil {
			continue
		}
		var aws struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		}
		raw, _ := json.Marshal(doc["_aws"])
		if json.Unmarshal(raw, &aws) != nil {
			continue
		}
		for _, d := range aws.CloudWatchMetrics {
			if d.Namespace != namespace || !slices.ContainsFunc(d.Metrics, func(m struct{ Name string }) bool { return m.Name == metric }) {
				continue
			}
			for _, set := range d.Dimensions {
				if len(set) != len(dims) {
					continue
				}
				ok := true
				for _, k := range set {
					if v, _ := doc[k].(string); v != dims[k] || dims[k] == "" {
						ok = false
					}
				}
				if ok {
					return true
				}
			}
		}
	}
	return false
}

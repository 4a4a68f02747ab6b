package infra

import (
	"slices"
	"strings"
)

// NewerProperties are the template's lines that goformation, which the
// tests parse the template with, does not know yet and refuses: an event
// source mapping's MetricsConfig. The tests parse the template without
// them (WithoutNewerProperties) and check them on the raw template.
var NewerProperties = []string{"MetricsConfig:", "Metrics: [EventCount]"}

// WithoutNewerProperties is template text without the NewerProperties
// lines.
func WithoutNewerProperties(b []byte) []byte {
	lines := strings.Split(string(b), "\n")
	lines = slices.DeleteFunc(lines, func(line string) bool { return slices.Contains(NewerProperties, strings.TrimSpace(line)) })
	return []byte(strings.Join(lines, "\n"))
}

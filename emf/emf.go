package emf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"
	"time"
)

// Unit is a CloudWatch metric unit.
type Unit string

// The units the programs use (Validate knows all of CloudWatch's).
const (
	Count        Unit = "Count"
	Milliseconds Unit = "Milliseconds"
	Bytes        Unit = "Bytes"
	None         Unit = "None"
)

// Limits of the specification.
const (
	MaxMetrics    = 100
	MaxDimensions = 30
)

// Logger writes EMF lines for one service.
type Logger struct {
	Namespace string
	Service   string
	W         io.Writer
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu   sync.Mutex
	cold bool
}

// Set is the metrics of one flush that share dimensions.
type Set struct {
	dims    map[string]string
	names   []string
	units   map[string]Unit
	values  map[string][]float64
	props   map[string]any
	dimKeys []string
}

// NewSet starts a set with the service dimension and the given dimension
// name/value pairs.
func (l *Logger) NewSet(dims ...string) *Set {
	s := &Set{dims: map[string]string{"service": l.Service}, units: map[string]Unit{}, values: map[string][]float64{}, props: map[string]any{}}
	s.dimKeys = []string{"service"}
	for i := 0; i+1 < len(dims); i += 2 {
		if _, ok := s.dims[dims[i]]; !ok {
			s.dimKeys = append(s.dimKeys, dims[i])
		}
		s.dims[dims[i]] = dims[i+1]
	}
	return s
}

// Add records a value of a metric (several values of one metric are kept
// as an array, as the specification allows).
func (s *Set) Add(name string, unit Unit, v float64) *Set {
	if _, ok := s.units[name]; !ok {
		s.names = append(s.names, name)
		s.units[name] = unit
	}
	s.values[name] = append(s.values[name], v)
	return s
}

// Property adds a member that is searchable in the logs but no metric.
func (s *Set) Property(key string, v any) *Set {
	s.props[key] = v
	return s
}

// Flush writes the set as one EMF line.
func (l *Logger) Flush(s *Set) error {
	if len(s.names) == 0 {
		return nil
	}
	if len(s.names) > MaxMetrics || len(s.dimKeys) > MaxDimensions {
		return fmt.Errorf("emf: %d metrics and %d dimensions in one set (at most %d and %d)", len(s.names), len(s.dimKeys), MaxMetrics, MaxDimensions)
	}
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	doc := map[string]any{}
	maps.Copy(doc, s.props)
	var defs []map[string]any
	for _, n := range s.names {
		vs := s.values[n]
		if len(vs) == 1 {
			doc[n] = vs[0]
		} else {
			doc[n] = vs
		}
		defs = append(defs, map[string]any{"Name": n, "Unit": string(s.units[n])})
	}
	for k, v := range s.dims {
		doc[k] = v
	}
	doc["_aws"] = map[string]any{
		"Timestamp": now().UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace": l.Namespace, "Dimensions": [][]string{s.dimKeys}, "Metrics": defs,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("emf: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.W.Write(append(b, '\n'))
	return err
}

// ColdStart flushes ColdStart = 1 (dimensions service and function_name,
// as Powertools does) the first time it is called, and nothing after.
func (l *Logger) ColdStart(function string) error {
	l.mu.Lock()
	first := !l.cold
	l.cold = true
	l.mu.Unlock()
	if !first {
		return nil
	}
	return l.Flush(l.NewSet("function_name", function).Add("ColdStart", Count, 1))
}

var units = map[string]bool{}

func init() {
	for _, u := range []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
		"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second", "Megabytes/Second",
		"Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second",
		"Count/Second", "None"} {
		units[u] = true
	}
}

// Validate checks one line against the EMF specification: a JSON object
// with _aws.Timestamp (epoch milliseconds) and _aws.CloudWatchMetrics,
// each directive with a Namespace, Dimensions (sets of at most 30 names,
// each a string member of the root) and Metrics (at most 100, each named,
// with a valid Unit when given, and a root member that is a number or an
// array of at most 100 numbers).
func Validate(line []byte) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(line, &doc); err != nil {
		return fmt.Errorf("emf: not a JSON object: %w", err)
	}
	var meta struct {
		Timestamp         *json.Number `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  *string    `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name              string `json:"Name"`
				Unit              *string
				StorageResolution *int
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	}
	raw, ok := doc["_aws"]
	if !ok {
		return errors.New("emf: no _aws member")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&meta); err != nil {
		return fmt.Errorf("emf: _aws: %w", err)
	}
	if meta.Timestamp == nil {
		return errors.New("emf: _aws.Timestamp missing")
	}
	if ts, err := meta.Timestamp.Int64(); err != nil || ts <= 0 {
		return fmt.Errorf("emf: _aws.Timestamp %s is not epoch milliseconds", *meta.Timestamp)
	}
	if len(meta.CloudWatchMetrics) == 0 {
		return errors.New("emf: _aws.CloudWatchMetrics is empty")
	}
	for _, d := range meta.CloudWatchMetrics {
		if d.Namespace == nil || len(*d.Namespace) == 0 || len(*d.Namespace) > 255 {
			return errors.New("emf: a directive without a Namespace (1–255 characters)")
		}
		if d.Dimensions == nil {
			return errors.New("emf: a directive without Dimensions")
		}
		for _, set := range d.Dimensions {
			if len(set) > MaxDimensions {
				return fmt.Errorf("emf: a dimension set of %d (at most %d)", len(set), MaxDimensions)
			}
			for _, name := range set {
				var v string
				if err := json.Unmarshal(doc[name], &v); err != nil {
					return fmt.Errorf("emf: dimension %q is not a string member of the root", name)
				}
			}
		}
		if len(d.Metrics) == 0 || len(d.Metrics) > MaxMetrics {
			return fmt.Errorf("emf: %d metrics in a directive (1 to %d)", len(d.Metrics), MaxMetrics)
		}
		for _, m := range d.Metrics {
			if m.Name == "" || len(m.Name) > 255 {
				return errors.New("emf: a metric without a Name (1–255 characters)")
			}
			if m.Unit != nil && !units[*m.Unit] {
				return fmt.Errorf("emf: metric %s: unit %q is not a CloudWatch unit", m.Name, *m.Unit)
			}
			if m.StorageResolution != nil && *m.StorageResolution != 1 && *m.StorageResolution != 60 {
				return fmt.Errorf("emf: metric %s: StorageResolution %d (1 or 60)", m.Name, *m.StorageResolution)
			}
			var one float64
			var many []float64
			if json.Unmarshal(doc[m.Name], &one) != nil {
				if err := json.Unmarshal(doc[m.Name], &many); err != nil || len(many) == 0 || len(many) > 100 {
					return fmt.Errorf("emf: metric %s: its root member is not a number or an array of 1–100 numbers", m.Name)
				}
			}
		}
	}
	return nil
}

// IsEMF reports whether a log line is an EMF document (has _aws).
func IsEMF(line []byte) bool {
	var doc map[string]json.RawMessage
	if json.Unmarshal(line, &doc) != nil {
		return false
	}
	_, ok := doc["_aws"]
	return ok
}

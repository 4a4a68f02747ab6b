package filter

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
)

// Criteria is an event source mapping's FilterCriteria: a record is handed
// to the function when it matches any one of the patterns, and filtered
// out when it matches none. Empty Criteria filter nothing out (a mapping
// without FilterCriteria).
type Criteria []Pattern

// ParseCriteria parses a mapping's patterns, as a template writes them:
// at most MaxFilters, each no longer than MaxPatternLength, with Lambda's
// syntax.
func ParseCriteria(patterns ...string) (Criteria, error) { return Lambda.Criteria(patterns...) }

// Criteria parses patterns with the syntax, as ParseCriteria does: at
// most MaxFilters, Lambda's default quota.
func (s Syntax) Criteria(patterns ...string) (Criteria, error) {
	return s.CriteriaQuota(MaxFilters, patterns...)
}

// CriteriaQuota parses patterns with the syntax for a mapping whose
// account has the filters quota AWS raised on request: at most quota
// patterns, quota from MaxFilters (the default) to MaxFiltersRaised (the
// most AWS raises it to). A quota outside that range is an error: Lambda
// refuses a mapping of more patterns than the account's quota, so say only
// what the account has.
func (s Syntax) CriteriaQuota(quota int, patterns ...string) (Criteria, error) {
	if quota < MaxFilters || quota > MaxFiltersRaised {
		return nil, fmt.Errorf("filter: a quota of %d patterns; Lambda's is %d by default and %d at most when raised on request (%s)", quota, MaxFilters, MaxFiltersRaised, lambdaQuotaPage)
	}
	if len(patterns) > quota {
		how := "Lambda's default quota; raised on request, say so with CriteriaQuota"
		if quota > MaxFilters {
			how = "the quota said raised"
		}
		return nil, fmt.Errorf("filter: %d patterns; a mapping takes %d (%s; %s)", len(patterns), quota, how, lambdaQuotaPage)
	}
	c := make(Criteria, 0, len(patterns))
	for i, pat := range patterns {
		p, err := s.Parse(pat)
		if err != nil {
			return nil, fmt.Errorf("pattern %d: %w", i+1, err)
		}
		c = append(c, p)
	}
	return c, nil
}

// MustCriteria is ParseCriteria for patterns written in the program: it
// panics on an error.
func MustCriteria(patterns ...string) Criteria {
	c, err := ParseCriteria(patterns...)
	if err != nil {
		panic(err)
	}
	return c
}

// Match reports whether the mapping hands the record to the function: no
// criteria, or a pattern that matches.
func (c Criteria) Match(r events.DynamoDBEventRecord) bool {
	if len(c) == 0 {
		return true
	}
	for _, p := range c {
		if p.Match(r) {
			return true
		}
	}
	return false
}

// Patterns are the patterns' JSON texts, in order: a template's
// FilterCriteria.Filters[].Pattern.
func (c Criteria) Patterns() []string {
	out := make([]string, len(c))
	for i, p := range c {
		out[i] = p.String()
	}
	return out
}

// Filter is one element of FilterCriteria.Filters, as CloudFormation and
// the Lambda API spell it.
type Filter struct {
	Pattern string `json:"Pattern"`
}

// MarshalJSON writes the criteria as CloudFormation's and the Lambda
// API's FilterCriteria: {"Filters":[{"Pattern":"…"}, …]}.
func (c Criteria) MarshalJSON() ([]byte, error) {
	fs := make([]Filter, len(c))
	for i, p := range c {
		fs[i] = Filter{Pattern: p.String()}
	}
	return json.Marshal(struct {
		Filters []Filter `json:"Filters"`
	}{fs})
}

// UnmarshalJSON reads FilterCriteria JSON, checking every pattern.
func (c *Criteria) UnmarshalJSON(b []byte) error {
	var fc struct {
		Filters []Filter `json:"Filters"`
	}
	if err := json.Unmarshal(b, &fc); err != nil {
		return fmt.Errorf("filter: FilterCriteria: %w", err)
	}
	ps := make([]string, len(fc.Filters))
	for i, f := range fc.Filters {
		ps[i] = f.Pattern
	}
	got, err := ParseCriteria(ps...)
	if err != nil {
		return err
	}
	*c = got
	return nil
}

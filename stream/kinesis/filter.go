package kinesis

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/dynastream/dynastream/stream/filter"
)

// Criteria reads the FilterCriteria patterns of a Lambda event source
// mapping on the Kinesis data stream, which filter the record's data (the
// DynamoDB change, JSON): {"data": {"dynamodb": {…}}}. It returns them as
// the patterns of the change itself, the filter a Runner on a Source takes
// (Config.Filter), with Lambda's syntax and quota for a DynamoDB change
// (filter.ParseCriteria). A pattern on anything but data (the Kinesis
// record's own fields, such as partitionKey) is refused: the Runner hands
// over the change, not the Kinesis record.
func Criteria(patterns ...string) (filter.Criteria, error) {
	inner := make([]string, len(patterns))
	for i, p := range patterns {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(p), &top); err != nil {
			return nil, fmt.Errorf("kinesis: pattern %d: %w", i+1, err)
		}
		data, ok := top["data"]
		if !ok || len(top) != 1 {
			keys := make([]string, 0, len(top))
			for k := range top {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return nil, fmt.Errorf("kinesis: pattern %d filters on %v: a Runner reads the change a record's data carries, so a pattern names data only ({\"data\": {\"dynamodb\": …}})", i+1, keys)
		}
		inner[i] = string(data)
	}
	c, err := filter.ParseCriteria(inner...)
	if err != nil {
		return nil, fmt.Errorf("kinesis: %w", err)
	}
	return c, nil
}

package main

// Minimum is the fewest capacity units one write of a kind needs in this
// design, counted as DynamoDB Local counts them (each item read strongly
// consistent up to 4 KB is one read unit; each item written up to 1 KB is
// one write unit, in a transaction or not; AWS counts transactional reads
// and writes twice): the items the write must change, the items whose
// state decides whether it may (access, conditions), and its
// Idempotency-Key record (the load generator sends one with every write).
type Minimum struct {
	Read  float64 `json:"read"`
	Write float64 `json:"write"`
	// Why lists the items.
	Why string `json:"why"`
}

// Units is the minimum's read and write units together.
func (m Minimum) Units() float64 { return m.Read + m.Write }

// minimum is the design's minimum per route of the load's mix.
var minimum = map[string]Minimum{}

package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/dynastream/dynastream/internal/ddb"
)

// RouteCost is what one kind of write (a route) cost the writer in
// DynamoDB during a phase, per write: requests, and capacity units (as
// DynamoDB Local reports them, transactions priced at AWS's rates by the
// writer's counter).
type RouteCost struct {
	Writes             int              `json:"writes"`
	RequestsPerWrite   float64          `json:"requestsPerWrite"`
	ReadUnitsPerWrite  float64          `json:"readUnitsPerWrite"`
	WriteUnitsPerWrite float64          `json:"writeUnitsPerWrite"`
	ByOperation        map[string]int64 `json:"requestsByOperation"`
	// Minimum is the fewest units the design allows for this write
	// (minimum below), and Ratio the measured units over it.
	Minimum *Minimum `json:"minimum,omitempty"`
	Ratio   float64  `json:"ratio,omitempty"`
}

// routeCosts is the writer's usage by route between two snapshots, per
// write of that route (writes counted by the load generator).
func routeCosts(before, after ddb.Counts, writes map[string]int) map[string]RouteCost {
	out := map[string]RouteCost{}
	for route, n := range writes {
		a, ok := after.ByLabel[route]
		if !ok || n == 0 {
			continue
		}
		b := before.ByLabel[route]
		c := RouteCost{
			Writes:             n,
			RequestsPerWrite:   float64(a.Calls-b.Calls) / float64(n),
			ReadUnitsPerWrite:  (a.ReadUnits - b.ReadUnits) / float64(n),
			WriteUnitsPerWrite: (a.WriteUnits - b.WriteUnits) / float64(n),
			ByOperation:        opsSince(a.ByOp, b.ByOp),
		}
		if m, ok := minimum[route]; ok {
			c.Minimum = &m
			if u := m.Units(); u > 0 {
				c.Ratio = (c.ReadUnitsPerWrite + c.WriteUnitsPerWrite) / u
			}
		}
		out[route] = c
	}
	return out
}

// opsSince is the calls per operation made between two snapshots.
func opsSince(after, before map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for op, n := range after {
		if d := n - before[op]; d > 0 {
			out[op] = d
		}
	}
	return out
}

// printRouteCosts writes the per-route table of a phase.
func printRouteCosts(w io.Writer, rate float64, costs map[string]RouteCost) {
	if len(costs) == 0 {
		return
	}
	routes := make([]string, 0, len(costs))
	for r := range costs {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	fmt.Fprintf(w, "\nthe writer's DynamoDB use per write, by route, at %.0f writes/s (capacity units as DynamoDB Local reports them, transactions priced at AWS's rates; minimum: the design's, see minimum.go):\n", rate)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "route\twrites\trequests\tRCU\tWCU\tminimum RCU + WCU\tratio\t")
	for _, r := range routes {
		c := costs[r]
		min, ratio := "-", "-"
		if c.Minimum != nil {
			min = fmt.Sprintf("%g + %g", c.Minimum.Read, c.Minimum.Write)
			ratio = fmt.Sprintf("%.2f", c.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.2f\t%.2f\t%.2f\t%s\t%s\t\n", r, c.Writes, c.RequestsPerWrite, c.ReadUnitsPerWrite, c.WriteUnitsPerWrite, min, ratio)
	}
	tw.Flush()
}

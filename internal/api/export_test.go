package api

import (
	"slices"
)

// OneWriteRoutes are the routes served as one transaction when they can.
func OneWriteRoutes() []string {
	var out []string
	for _, rt := range routes {
		if rt.commit != ordinary {
			out = append(out, rt.pattern)
		}
	}
	return slices.Sorted(slices.Values(out))
}

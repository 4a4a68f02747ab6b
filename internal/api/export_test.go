package api

import (
	"maps"
	"slices"
)

// OneWriteRoutes are the routes served as one transaction when they can.
func OneWriteRoutes() []string { return slices.Sorted(maps.Keys(oneWrite)) }

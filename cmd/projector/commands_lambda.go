//go:build lambda.norpc

package main

import (
	"github.com/dynastream/dynastream/cmd/internal/app"
	"github.com/dynastream/dynastream/internal/store"
)

// command: a Lambda build serves the stream only; the operator's
// subcommands (commands.go) are in the ordinary build.
func command(*store.Store, app.Common, string, []string) bool { return false }

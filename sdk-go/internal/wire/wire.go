// Package wire lets package convergetest read what a worker sent the way
// package converge reads back its own checked results, without a public
// API for it: converge sets DecodeResult when it is initialised.
package wire

import convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"

// DecodeResult turns a task's result and the composition chunks sent
// before it into a *converge.Outcome, or the failure the result reports.
// Set by package converge.
var DecodeResult func(result *convergev1.TaskResult, chunks []*convergev1.ComposeChunk) (outcome any, err error)

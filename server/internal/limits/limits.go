// Package limits holds the documented size limits. Every limit
// that a request can hit is here, so docs/limits.md and the code agree.
package limits

const (
	// MaxSpecBytes bounds one resource spec, as compact JSON.
	MaxSpecBytes = 512 << 10
	// MaxStatusBytes bounds one status a worker reports.
	MaxStatusBytes = 512 << 10
	// MaxSchemaBytes bounds each JSON Schema in a manifest.
	MaxSchemaBytes = 256 << 10
	// MaxRequestBytes bounds one API request body (a batch apply of up to
	// 1,000 resources must fit).
	MaxRequestBytes = 32 << 20
	// MaxWorkerMessageBytes bounds one message on a worker stream.
	MaxWorkerMessageBytes = 4 << 20
	// MaxBatch is the most resources one ApplyResources call may carry.
	MaxBatch = 1000
	// MaxChildren is the most children one composite may have.
	MaxChildren = 100_000
)

// DefaultMaxTransientAttempts is how many consecutive transient failures
// a task may have before its failure turns terminal, for a kind whose
// policy leaves max_transient_attempts at 0 (-1 there means never).
const DefaultMaxTransientAttempts = 20

package converge

import (
	"errors"
	"fmt"
	"time"
)

// terminalError marks an error as terminal; see [Terminal].
type terminalError struct {
	err error
}

func (e *terminalError) Error() string { return e.err.Error() }

// Unwrap lets errors.Is and errors.As see the wrapped error.
func (e *terminalError) Unwrap() error { return e.err }

// Terminal marks err as terminal: retrying will not help, so the server pins
// the resource as Failed for its current generation instead of retrying.
// The resource is retried again once its spec changes or an operator forces a
// reconcile. Errors that are not marked terminal are transient and retried
// with backoff.
//
// The returned error keeps err's message and wraps it, so errors.Is and
// errors.As see through it. Terminal(nil) returns nil. It composes with
// [Reason]; a terminal error must not carry [RetryAfter].
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &terminalError{err: err}
}

// IsTerminal reports whether err, or any error it wraps, was marked with
// [Terminal].
func IsTerminal(err error) bool {
	var t *terminalError
	return errors.As(err, &t)
}

// reasonError attaches a reason code; see [Reason].
type reasonError struct {
	code string
	err  error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

// Reason attaches a machine-readable reason code to a handler's error, e.g.
// Reason("QuotaExceeded", err). The server records it with the failure:
// it is the reason of the resource's Ready and Synced conditions, shown by
// conctl get and describe, and a label of the task-completion metric.
//
// A code is CamelCase: an upper-case letter, then letters and digits, at
// most 63 characters (the protocol's rule). A task whose error carries an
// invalid code fails terminally with a message naming the rule, so the
// mistake is seen and fixed rather than silently dropped.
//
// Reason composes with [Terminal] and [RetryAfter] in any order, e.g.
// Terminal(Reason("InvalidRegion", err)); of several Reason wrappers the
// outermost wins. The returned error keeps err's message and wraps it.
// Reason(code, nil) returns nil.
func Reason(code string, err error) error {
	if err == nil {
		return nil
	}
	return &reasonError{code: code, err: err}
}

// ReasonOf returns the code attached to err, or any error it wraps, with
// [Reason]; "" when there is none.
func ReasonOf(err error) string {
	var r *reasonError
	if errors.As(err, &r) {
		return r.code
	}
	return ""
}

// retryAfterError asks for a retry delay; see [RetryAfter].
type retryAfterError struct {
	after time.Duration
	err   error
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter asks the server to retry a transiently failed task no sooner
// than d from now, instead of after its exponential backoff: for a handler
// that knows when trying again makes sense (a rate limit's reset, a
// Retry-After header). d must be more than 0 and at most 24 hours.
//
// It is for transient failures only: a task whose error is both
// [Terminal] and RetryAfter, or whose delay is out of range, fails
// terminally with a message naming the rule. The attempt still counts
// towards the kind's max_transient_attempts. It composes with [Reason];
// of several RetryAfter wrappers the outermost wins. The returned error
// keeps err's message and wraps it. RetryAfter(d, nil) returns nil.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{after: d, err: err}
}

// RetryAfterOf returns the delay attached to err, or any error it wraps,
// with [RetryAfter], and whether there is one.
func RetryAfterOf(err error) (time.Duration, bool) {
	var r *retryAfterError
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// ReasonImportNotFound is the reason of an [ImportNotFound] failure.
const ReasonImportNotFound = "ImportNotFound"

// ImportNotFound is the failure a handler returns when the object a
// resource imports ([Task.ImportID]) does not exist: terminal (a retry
// would not make it exist), with reason ImportNotFound, and a message
// naming the id. detail, if not nil, says what the lookup found.
func ImportNotFound(id string, detail error) error {
	msg := fmt.Sprintf("import: no object with id %q exists", id)
	if detail != nil {
		return Terminal(Reason(ReasonImportNotFound, fmt.Errorf("%s: %w", msg, detail)))
	}
	return Terminal(Reason(ReasonImportNotFound, errors.New(msg)))
}

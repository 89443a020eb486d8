package converge

import "errors"

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
// errors.As see through it. Terminal(nil) returns nil.
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

package conctl

import (
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
)

// usageError is a mistake in the command line itself; its report points at
// the command's help.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// flagError reports a flag the command line got wrong. --timeout was once
// every command's per-call limit; now only the commands that wait have it,
// bounding the wait, so elsewhere the error says where the limit went.
func flagError(_ *cobra.Command, err error) error {
	if strings.Contains(err.Error(), "unknown flag: --timeout") {
		err = fmt.Errorf("%w (--timeout bounds --wait on the commands that wait; the time limit of each call to the server is --request-timeout)", err)
	}
	return usageError{err}
}

// contextError adds what conctl was doing to an error while keeping it
// reachable by errors.Is/As. Its text uses message, so a connect error shows
// the server's words rather than its code.
type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string { return e.msg }
func (e *contextError) Unwrap() error { return e.err }

func wrapf(err error, format string, args ...any) error {
	return &contextError{msg: fmt.Sprintf(format, args...) + ": " + message(err), err: err}
}

// message is the text to show for err. A connect error shows its message
// (the server's names the field and rule); only an empty one shows the code.
func message(err error) string {
	if ce, ok := err.(*connect.Error); ok {
		if m := ce.Message(); m != "" {
			return m
		}
		return ce.Code().String()
	}
	return err.Error()
}

// printError reports err on stderr, one "error:" line per joined error, with
// a hint when the cause is the command line or the connection.
func (a *app) printError(cmd *cobra.Command, err error) {
	var errs []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		text := strings.ReplaceAll(message(e), "\n", "\n  ")
		fmt.Fprintf(a.stderr, "error: %s\n", text)
	}
	var ue usageError
	switch {
	case errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command"):
		path := "conctl"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", path)
	case tlsHint(a, err) != "":
		fmt.Fprintln(a.stderr, tlsHint(a, err))
	case connect.CodeOf(err) == connect.CodeUnavailable && !connect.IsWireError(err):
		fmt.Fprintf(a.stderr, "Is the server running at %s? Set it with --server or %s.\n", a.server, serverEnv)
	case connect.CodeOf(err) == connect.CodeDeadlineExceeded && !connect.IsWireError(err):
		fmt.Fprintf(a.stderr, "The call took longer than --request-timeout %s.\n", a.requestTimeout)
	}
}

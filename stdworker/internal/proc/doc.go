// Package proc runs one external program per task, as stdworker's providers
// need: a request on stdin, an answer on stdout, and nothing left running
// afterwards.
//
// Run starts the program in a process group of its own, writes Spec.Stdin to
// it and collects what it prints:
//
//	res, err := proc.Run(ctx, proc.Spec{
//		Path:    "./backup.sh",
//		Stdin:   request,     // e.g. a JSON request
//		Timeout: time.Minute, // 0: only ctx bounds it
//	})
//
// The rules, written once here for every provider:
//
//   - Exit 0 is success: err is nil and res.Stdout holds what it printed.
//   - Exit 2 is a terminal failure: err is an *ExitError wrapped with
//     converge.Terminal, so the resource is pinned Failed.
//   - Any other exit, including death by a signal (reported as 128+signal,
//     e.g. 137 for SIGKILL), is a transient failure: an *ExitError.
//   - Every ExitError's message carries the exit code and the last bytes of
//     stderr (Spec.StderrTail, default 4 KiB), so the program's own
//     explanation reaches the resource's failure message.
//   - When ctx ends (the task's deadline, a cancel from the server, a drain
//     that outlasted its timeout) or Spec.Timeout passes, the whole process
//     group gets SIGTERM, then SIGKILL after Spec.KillGrace (default 5 s):
//     grandchildren die too. A timeout is transient; ctx's end is reported
//     as an error wrapping ctx.Err().
//   - Once the program has exited, whatever it left behind in its process
//     group is killed: a task leaks no processes. On Linux the program is
//     also killed if stdworker dies first (its task runs again elsewhere).
//   - Stdout is capped at Spec.MaxStdout (default 1 MiB): a program that
//     prints more is killed and the task fails terminally with
//     "output exceeds 1 MiB". With Spec.StdoutTail set, only the last
//     MaxStdout bytes are kept instead and printing more is no error.
//   - A program that cannot be started (not found, not executable) is a
//     terminal failure naming it: retrying will not make it appear.
//
// res is returned whenever the program ran, with or without an error, so a
// caller may report its exit code and output tails.
package proc

//go:build unix

package proc_test

import (
	"context"
	"fmt"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/stdworker/internal/proc"
)

func ExampleRun() {
	res, err := proc.Run(context.Background(), proc.Spec{
		Path:    "/bin/sh",
		Args:    []string{"-c", `read req; echo "got $req"; echo "a note" >&2`},
		Stdin:   []byte("hello\n"),
		Timeout: 10 * time.Second,
	})
	fmt.Printf("%s%s%v\n", res.Stdout, res.StderrTail, err)

	_, err = proc.Run(context.Background(), proc.Spec{Path: "/bin/sh", Args: []string{"-c", "echo 'bad input' >&2; exit 2"}})
	fmt.Println(converge.IsTerminal(err), err)
	// Output:
	// got hello
	// a note
	// <nil>
	// true program "/bin/sh" exited with code 2; stderr: bad input
}

// Command conctl is the Converge command line. See "conctl --help".
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/convergehq/converge/server/internal/conctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := conctl.Run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// Command pgpair starts a throwaway PostgreSQL primary and a hot standby
// streaming from it (devpg.StartStandby), for end-to-end tests written in
// other languages than Go, as the TypeScript SDK's. Once both accept
// connections it prints one JSON line to standard output,
//
//	{"primary":"postgres://…/converge","standby":"postgres://…/converge"}
//
// naming a database "converge" on each, and it stops both clusters when
// it gets SIGINT or SIGTERM (they also die with it if it is killed).
//
//	go run ./server/internal/pgtest/pgpair -standby-setting recovery_min_apply_delay=2s
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
)

// settings collects repeated name=value flags.
type settings map[string]string

func (s settings) String() string { return fmt.Sprint(map[string]string(s)) }

func (s settings) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want name=value", v)
	}
	s[name] = value
	return nil
}

func main() {
	standby := settings{}
	flag.Var(standby, "standby-setting", "a server setting of the standby, name=value (repeatable), e.g. recovery_min_apply_delay=2s")
	flag.Parse()
	if err := run(standby); err != nil {
		fmt.Fprintln(os.Stderr, "pgpair:", err)
		os.Exit(1)
	}
}

func run(standbySettings settings) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	primary, err := devpg.Start(startCtx, devpg.Options{InMemory: true})
	if err != nil {
		return err
	}
	defer stopCluster("primary", primary)
	if err := primary.CreateDatabase(startCtx, "converge", ""); err != nil {
		return err
	}
	standby, err := devpg.StartStandby(startCtx, primary, devpg.Options{InMemory: true, Settings: standbySettings})
	if err != nil {
		return err
	}
	defer stopCluster("standby", standby)
	line, err := json.Marshal(map[string]string{"primary": primary.URL("converge"), "standby": standby.URL("converge")})
	if err != nil {
		return err
	}
	fmt.Println(string(line))
	<-ctx.Done()
	return nil
}

func stopCluster(name string, c *devpg.Cluster) {
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgpair: stopping the %s: %v\n", name, err)
	}
}

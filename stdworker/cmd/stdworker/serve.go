package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/convergehq/converge/stdworker/internal/config"
	"github.com/convergehq/converge/stdworker/internal/fleet"
	"github.com/convergehq/converge/stdworker/internal/transport"
)

// serve runs stdworker until ctx ends, then drains.
func serve(ctx context.Context, f flags) error {
	log, err := f.logger()
	if err != nil {
		return err
	}
	if f.parallelism < 1 || f.parallelism > config.MaxParallelism {
		return fmt.Errorf("--parallelism: %d is out of range (1 to %d)", f.parallelism, config.MaxParallelism)
	}
	only, err := config.ParseKinds(f.kinds)
	if err != nil {
		return err
	}
	var file *config.File
	baseDir, err := os.Getwd()
	if err != nil {
		return err
	}
	provs := providers(baseDir)
	if f.config != "" {
		names := make([]string, 0, len(provs))
		for n := range provs {
			names = append(names, n)
		}
		sort.Strings(names)
		if file, err = config.Load(f.config, names); err != nil {
			return err
		}
		provs = providers(file.Dir)
	}
	f.stateDir = stateDir(f.stateDir, os.Getenv, os.UserHomeDir, os.TempDir())
	if err := os.MkdirAll(f.stateDir, 0o700); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	tok, err := f.token()
	if err != nil {
		return err
	}
	control, err := f.control(tok)
	if err != nil {
		return err
	}
	hc, err := transport.Client(f.server, f.tls)
	if err != nil {
		return err
	}
	jobs, err := plan(ctx, control, file, only, provs, log)
	if err != nil {
		return err
	}

	opts := fleet.Options{
		ServerURL: strings.TrimRight(f.server, "/"), Control: control, Log: log,
		Token: tok, StateDir: f.stateDir, Parallelism: f.parallelism, DrainTimeout: f.drainTimeout,
	}
	if hc != nil {
		opts.HTTPClient = hc
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fl := fleet.New(fctx, opts)
	started := 0
	for _, j := range jobs {
		_, err := fl.Start(ctx, j.provider, j.served, j.parallelism)
		switch {
		case err == nil:
			started++
		case j.optional:
			log.Error("std kind not served: its provider cannot start", "err", err)
		default:
			cancel() // drain what already started before reporting
			_ = fl.Wait()
			return err
		}
	}
	if started == 0 {
		return errors.New("nothing to serve: no provider could start; see the errors above")
	}
	log.Info("stdworker running", "server", opts.ServerURL, "api", f.apiURL(), "kinds", started)
	<-ctx.Done()
	log.Info("draining")
	return fl.Wait()
}

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/app"
)

func readConfig(t *testing.T, env string, args ...string) (app.Config, error) {
	t.Helper()
	t.Setenv("CONVERGE_READ_DATABASE_URL", env)
	var f readFlags
	cmd := &cobra.Command{Use: "test"}
	f.register(cmd)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{DatabaseURL: "postgres://primary/db"}
	err := f.apply(cmd, &cfg)
	return cfg, err
}

func TestReadFlags(t *testing.T) {
	cfg, err := readConfig(t, "")
	if err != nil || cfg.ReadDatabaseURL != "" {
		t.Fatalf("no flags: %+v, %v", cfg.ReadDatabaseURL, err)
	}
	cfg, err = readConfig(t, "", "--read-database-url", "postgres://standby/db", "--read-max-lag", "3s", "--read-wait", "250ms")
	if err != nil || cfg.ReadDatabaseURL != "postgres://standby/db" || cfg.ReadMaxLag != 3*time.Second || cfg.ReadWait != 250*time.Millisecond {
		t.Fatalf("flags: %q %s %s, %v", cfg.ReadDatabaseURL, cfg.ReadMaxLag, cfg.ReadWait, err)
	}
	cfg, err = readConfig(t, "postgres://standby-env/db")
	if err != nil || cfg.ReadDatabaseURL != "postgres://standby-env/db" {
		t.Fatalf("env: %q, %v", cfg.ReadDatabaseURL, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--read-max-lag", "3s"}, "--read-max-lag: only with --read-database-url"},
		{[]string{"--read-database-url", "postgres://standby/db", "--read-max-lag", "100ms"}, "--read-max-lag 100ms: must be between 400ms"},
		{[]string{"--read-database-url", "postgres://standby/db", "--read-wait", "0s"}, "--read-wait 0s: must be positive"},
		{[]string{"--read-database-url", "postgres://primary/db"}, "--read-database-url: names the --database-url itself"},
	} {
		if _, err := readConfig(t, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v; want %q", c.args, err, c.want)
		}
	}
}

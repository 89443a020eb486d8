package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/app"
)

func parseServerFlags(t *testing.T, args ...string) (app.Config, error) {
	t.Helper()
	var f serverFlags
	cmd := &cobra.Command{Use: "test"}
	f.register(cmd, ":0")
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.config("postgres://unused")
}

func TestMetricsListenFlag(t *testing.T) {
	cfg, err := parseServerFlags(t)
	if err != nil || cfg.MetricsListen != "" {
		t.Fatalf("default: metrics listen %q, err %v; want off", cfg.MetricsListen, err)
	}
	cfg, err = parseServerFlags(t, "--metrics-listen", "127.0.0.1:9090")
	if err != nil || cfg.MetricsListen != "127.0.0.1:9090" {
		t.Fatalf("--metrics-listen 127.0.0.1:9090: %q, %v", cfg.MetricsListen, err)
	}
}

func TestLogFlags(t *testing.T) {
	if _, err := parseServerFlags(t, "--log-format", "json", "--log-level", "debug"); err != nil {
		t.Fatalf("json/debug: %v", err)
	}
	if _, err := parseServerFlags(t, "--log-format", "xml"); err == nil || !strings.Contains(err.Error(), `--log-format "xml"`) {
		t.Fatalf("--log-format xml: err = %v", err)
	}
	if _, err := parseServerFlags(t, "--log-level", "loud"); err == nil || !strings.Contains(err.Error(), `--log-level "loud"`) {
		t.Fatalf("--log-level loud: err = %v", err)
	}
}

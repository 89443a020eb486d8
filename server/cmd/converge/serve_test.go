package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// serverConfig parses args as the flags serve and dev share.
func serverConfig(t *testing.T, args ...string) (int, error) {
	t.Helper()
	var f serverFlags
	cmd := &cobra.Command{Use: "test"}
	f.register(cmd, ":0")
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config("postgres://unused")
	return cfg.HistoryKeep, err
}

func TestHistoryKeepFlag(t *testing.T) {
	if keep, err := serverConfig(t); err != nil || keep != 50 {
		t.Fatalf("default = %d, %v", keep, err)
	}
	if keep, err := serverConfig(t, "--history-keep", "7"); err != nil || keep != 7 {
		t.Fatalf("--history-keep 7 = %d, %v", keep, err)
	}
	for _, bad := range []string{"0", "1001"} {
		if _, err := serverConfig(t, "--history-keep", bad); err == nil ||
			!strings.Contains(err.Error(), "--history-keep "+bad+": must be between 1 and 1000") {
			t.Fatalf("--history-keep %s: err = %v", bad, err)
		}
	}
}

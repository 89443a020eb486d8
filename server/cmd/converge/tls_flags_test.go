package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
)

func TestTLSFlags(t *testing.T) {
	var f serverFlags
	cmd := &cobra.Command{Use: "test"}
	f.register(cmd, ":0")
	if err := cmd.Flags().Parse([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-client-ca", "ca.pem",
		"--tls-client-auth", "request", "--allow-api-ids", "spiffe://td/a,spiffe://td/ops/*", "--allow-worker-ids", "spiffe://td/w"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config("postgres://unused")
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.TLS
	if got.CertFile != "c.pem" || got.KeyFile != "k.pem" || got.ClientCAFile != "ca.pem" || got.ClientAuth != "request" ||
		!slices.Equal(got.AllowAPIIDs, []string{"spiffe://td/a", "spiffe://td/ops/*"}) || !slices.Equal(got.AllowWorkerIDs, []string{"spiffe://td/w"}) {
		t.Fatalf("TLS config = %+v", got)
	}
	var plain serverFlags
	cmd = &cobra.Command{Use: "test"}
	plain.register(cmd, ":0")
	if cfg, err := plain.config("postgres://unused"); err != nil || cfg.TLS.Enabled() {
		t.Fatalf("without TLS flags: TLS enabled %v, err %v", cfg.TLS.Enabled(), err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runPgBin runs converge pg-bin with CONVERGE_PG_BIN=dir, which keeps it
// from ever installing anything.
func runPgBin(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("CONVERGE_PG_BIN", dir)
	cmd := pgBinCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func TestPgBinPrintsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runPgBin(t, dir)
	if err != nil || out != dir+"\n" {
		t.Fatalf("pg-bin = %q, %v; want %q", out, err, dir+"\n")
	}
}

func TestPgBinNamesWhatToInstall(t *testing.T) {
	empty := t.TempDir()
	_, err := runPgBin(t, empty)
	if err == nil {
		t.Fatal("pg-bin with no binaries succeeded")
	}
	for _, want := range []string{"CONVERGE_PG_BIN=" + empty, "apt-get install postgresql", "dnf install postgresql-server", "brew install postgresql@16"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := runPgBin(t, empty, "extra"); err == nil {
		t.Error("pg-bin accepted an argument")
	}
}

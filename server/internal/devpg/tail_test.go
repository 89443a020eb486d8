package devpg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTailBuffer(t *testing.T) {
	var tb tailBuffer
	_, _ = tb.Write([]byte(strings.Repeat("a", tailSize)))
	_, _ = tb.Write([]byte("end"))
	if s := tb.String(); len(s) != tailSize || !strings.HasSuffix(s, "aend") {
		t.Errorf("tail: len %d, suffix %q; want len %d ending in \"aend\"", len(s), s[len(s)-4:], tailSize)
	}
	tb.Reset()
	if tb.String() != "" {
		t.Error("Reset left data")
	}
}

func TestReadTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("old run\nnew run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readTail(path, int64(len("old run\n"))); got != "new run\n" {
		t.Errorf("readTail from offset = %q, want %q", got, "new run\n")
	}
	if got := readTail(filepath.Join(t.TempDir(), "missing"), 0); got != "" {
		t.Errorf("readTail of a missing file = %q", got)
	}
}

package devpg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeInitdb installs an initdb that rejects the C.UTF-8 locale, as on
// systems without it, and records the arguments it accepts.
func fakeInitdb(t *testing.T) *Cluster {
	t.Helper()
	own, err := serverOwner()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := chown(dir, own); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := `#!/bin/sh
case "$*" in
*--locale=C.UTF-8*) echo 'initdb: error: invalid locale name "C.UTF-8"' >&2; exit 1 ;;
esac
echo "$*" > "` + dir + `/args"
`
	if err := os.WriteFile(filepath.Join(bin, "initdb"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The script runs as the postgres user when the test runs as root;
	// t.TempDir's parent is private to us.
	for _, d := range []string{filepath.Dir(bin), bin} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &Cluster{bin: bin, dir: dir, owner: own}
}

func TestInitdbFallsBackToCLocale(t *testing.T) {
	for _, durable := range []bool{false, true} {
		c := fakeInitdb(t)
		c.opts.Durable = durable
		if err := c.initdb(t.Context()); err != nil {
			t.Fatalf("initdb: %v", err)
		}
		b, err := os.ReadFile(filepath.Join(c.dir, "args"))
		if err != nil {
			t.Fatal(err)
		}
		args := " " + strings.Join(strings.Fields(string(b)), " ") + " "
		for _, want := range []string{" -U postgres ", " -A trust ", " -E UTF8 ", " --locale=C "} {
			if !strings.Contains(args, want) {
				t.Errorf("initdb args %q lack %q", args, want)
			}
		}
		if got := strings.Contains(args, " --no-sync "); got == durable {
			t.Errorf("Durable=%v: initdb args %q; want --no-sync only when not durable", durable, args)
		}
	}
}

func TestInitdbFailureQuotesOutput(t *testing.T) {
	c := fakeInitdb(t)
	if err := os.WriteFile(filepath.Join(c.bin, "initdb"), []byte("#!/bin/sh\necho 'disk on fire' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := c.initdb(t.Context())
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || !strings.Contains(err.Error(), "initdb -D") {
		t.Errorf("initdb error = %v, want one naming initdb and quoting its output", err)
	}
}

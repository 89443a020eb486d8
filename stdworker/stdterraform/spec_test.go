package stdterraform

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	good := []string{
		`{"source":"./m"}`,
		`{"source":"git::https://example.com/m.git?ref=v1","variables":{"a":1,"b":{"c":[1,2]}},"workspace":"blue-2"}`,
		`{"source":"/abs/m","variables":null}`,
	}
	for _, s := range good {
		if _, err := parseSpec(json.RawMessage(s)); err != nil {
			t.Errorf("parseSpec(%s): %v", s, err)
		}
	}
	bad := map[string]string{
		``:                                    "spec.source: required",
		`{"source":""}`:                       "spec.source: required",
		`{"source":"-x"}`:                     "must not start with '-'",
		`{"source":"a\nb"}`:                   "control character",
		`{"source":"./m","variables":"x"}`:    "spec.variables",
		`{"source":"./m","workspace":"../x"}`: "spec.workspace",
		`{"source":"./m","extra":1}`:          `unknown field "extra"`,
		`{"source":"` + strings.Repeat("a", 3000) + `"}`: "longer than",
	}
	for in, want := range bad {
		if _, err := parseSpec(json.RawMessage(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseSpec(%.40s): err = %v, want %q", in, err, want)
		}
	}
}

func TestConfigLayers(t *testing.T) {
	settings, err := parseConfig(json.RawMessage(`{"binary":"tofu","env":{"A":"1","B":"2"}}`), "settings")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig(json.RawMessage(`{"backend":{"type":"pg","schema_prefix":"team_"},"env":{"B":"3"}}`), "config")
	if err != nil {
		t.Fatal(err)
	}
	got := settings.over(cfg)
	if got.binary() != "tofu" || got.backendType() != backendPG || got.Env["A"] != "1" || got.Env["B"] != "3" {
		t.Errorf("merged = %+v, want tofu, pg, A=1, B=3", got)
	}
	if settings.Env["B"] != "2" {
		t.Error("merging changed the settings' env")
	}
	if (config{}).binary() != "terraform" || (config{}).backendType() != backendLocal {
		t.Error("defaults should be terraform and the local backend")
	}
	for in, want := range map[string]string{
		`{"backend":{"type":"local","conn_str":"x"}}`:      "config.backend: conn_str",
		`{"backend":{"type":"pg","schema_prefix":"Bad-"}}`: "config.backend.schema_prefix",
		`{"env":{"TF_LOG":"debug"}}`:                       "config.env.TF_LOG",
		`{"env":{"A=B":"x"}}`:                              "config.env",
		`{"binary":"a\nb"}`:                                "config.binary",
		`{"color":true}`:                                   `unknown field "color"`,
		`[1]`:                                              "config:",
	} {
		if _, err := parseConfig(json.RawMessage(in), "config"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseConfig(%s): err = %v, want %q", in, err, want)
		}
	}
}

func TestLayoutRefusesEscapes(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", `a\b`} {
		if _, err := resourceLayout("/root", "default", "std.terraform", name); err == nil {
			t.Errorf("resourceLayout with name %q: want an error", name)
		}
	}
	l, err := resourceLayout("/root", "default", "std.terraform", "web")
	if err != nil || l.stateFile() != "/root/default/std.terraform/web/state/terraform.tfstate" {
		t.Errorf("layout = %+v, %v", l, err)
	}
}

func TestPGSchema(t *testing.T) {
	a := pgSchema("tf_", "default", "std.terraform", "web")
	if !strings.HasPrefix(a, "tf_default_std_terraform_web_") || len(a) > 63 {
		t.Errorf("schema = %q", a)
	}
	long := pgSchema("tf_", "default", "std.terraform", strings.Repeat("x", 200))
	long2 := pgSchema("tf_", "default", "std.terraform", strings.Repeat("x", 199)+"y")
	if len(long) > 63 || long == long2 {
		t.Errorf("long names: %q and %q, want distinct names of at most 63 bytes", long, long2)
	}
	if pgSchema("tf_", "a", "b", "c-d") == pgSchema("tf_", "a", "b", "c.d") {
		t.Error("names differing only in punctuation share a schema")
	}
}

func TestLocksSerialisePerKey(t *testing.T) {
	var l locks
	ctx := context.Background()
	unlock, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Another key is free.
	unlockB, err := l.lock(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	// The same key waits, and gives up with its context.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.lock(short, "a"); err == nil || !strings.Contains(err.Error(), "another terraform run of a") {
		t.Errorf("second lock of a: err = %v, want a timeout naming the key", err)
	}
	got := make(chan struct{})
	go func() {
		u, err := l.lock(ctx, "a")
		if err == nil {
			u()
		}
		close(got)
	}()
	unlock()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting lock was not granted after unlock")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.held) != 0 || len(l.users) != 0 {
		t.Errorf("locks left behind: %v %v", l.held, l.users)
	}
}

// FuzzParseSpec: specs are user input; parsing never panics and what it
// accepts gives a JSON object of variables.
func FuzzParseSpec(f *testing.F) {
	f.Add(`{"source":"./m","variables":{"a":1},"workspace":"w"}`)
	f.Add(`{"source":"x","variables":[]}`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parseSpec(json.RawMessage(in))
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(s.varsJSON(), &m); err != nil {
			t.Fatalf("accepted spec %q gives variables %q: %v", in, s.varsJSON(), err)
		}
	})
}

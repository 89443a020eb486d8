package stdstarlark

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

func reaction(name, trigger string, emits ...string) *convergev1.Reaction {
	return &convergev1.Reaction{Name: name, Trigger: trigger, Emits: emits}
}

func TestRegister(t *testing.T) {
	base, _ := filepath.Abs("testdata")
	composer := []*convergev1.Reaction{reaction("compose", "specChange", "children", "edges", "status"), reaction("rollup", "childrenSettled", "status")}
	cases := []struct {
		name      string
		reactions []*convergev1.Reaction
		settings  string
		want      string // "" for success
	}{
		{"composer and rollup", composer, `{"dir": "bundle"}`, ""},
		{"leaf", []*convergev1.Reaction{reaction("build", "specChange", "status")}, `{"dir": "bundle", "main": "./main.star", "max_steps": 5000}`, ""},
		{"no settings", composer, ``, "settings.dir: required"},
		{"no dir", composer, `{"main": "main.star"}`, "settings.dir: required"},
		{"unknown setting", composer, `{"dir": "bundle", "steps": 1}`, `unknown field "steps"`},
		{"missing main", composer, `{"dir": "bundle", "main": "nope.star"}`, "settings.main: nope.star is not a file of the bundle"},
		{"main outside", composer, `{"dir": "bundle", "main": "../x.star"}`, `settings.main: "../x.star" must be a .star file inside the bundle`},
		{"main not star", composer, `{"dir": "bundle", "main": "main.py"}`, "must be a .star file"},
		{"missing dir", composer, `{"dir": "nowhere"}`, "settings.dir: "},
		{"too many steps", composer, `{"dir": "bundle", "max_steps": 20000000000}`, "settings.max_steps"},
		{"teardown", []*convergev1.Reaction{reaction("compose", "specChange", "children"), reaction("cleanup", "deleteRequested", "finalizer")}, `{"dir": "bundle"}`, `reaction "cleanup": trigger deleteRequested is not served`},
		{"nothing", nil, `{"dir": "bundle"}`, "no specChange reaction"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &convergev1.KindManifest{Kind: "landing", KindVersion: 1, Reactions: tc.reactions}
			w, err := converge.NewWorker("http://127.0.0.1:1")
			if err != nil {
				t.Fatal(err)
			}
			err = New(WithBaseDir(base)).Register(context.Background(), w, provider.Served{Manifest: m, Settings: json.RawMessage(tc.settings)}, provider.Env{StateDir: t.TempDir()})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Register: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), "stdstarlark landing@1: ") || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err = %v, want one naming the kind and containing %q", err, tc.want)
			}
		})
	}
}

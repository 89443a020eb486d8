//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// providers is what scripts/find-tf-providers.sh built, once per test
// binary: a filesystem mirror holding the time provider.
var providers struct {
	once       sync.Once
	mirror, rc string
	skip       string
}

// providerMirror returns the provider mirror and a terraform CLI
// configuration file that installs from it only, or skips the test with
// the script's reason. The script builds the provider from its Go module
// the first time (about a minute) and caches it.
func providerMirror(t *testing.T) (mirror, rc string) {
	t.Helper()
	script := repoPath(t, "scripts/find-tf-providers.sh")
	providers.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "bash", script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		providers.mirror = strings.TrimSpace(string(out))
		if err != nil || providers.mirror == "" {
			providers.skip = fmt.Sprintf("skipped: no Terraform provider mirror: scripts/find-tf-providers.sh: %v: %s", err, strings.TrimSpace(stderr.String()))
			return
		}
		dir, err := os.MkdirTemp("", "tf-cli-*")
		if err != nil {
			providers.skip = "skipped: " + err.Error()
			return
		}
		providers.rc = filepath.Join(dir, "cli.tfrc")
		content := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", providers.mirror)
		if err := os.WriteFile(providers.rc, []byte(content), 0o644); err != nil {
			providers.skip = "skipped: " + err.Error()
		}
	})
	if providers.skip != "" {
		t.Skip(providers.skip)
	}
	return providers.mirror, providers.rc
}

// timeTypes are the time provider's resource types and their kinds.
var timeTypes = map[string]string{
	"time_static": "tf.time.static", "time_offset": "tf.time.offset",
	"time_rotating": "tf.time.rotating", "time_sleep": "tf.time.sleep",
}

// condition returns r's condition of type typ.
func condition(r *convergev1.Resource, typ string) *convergev1.Condition {
	for _, c := range r.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// TestTerraformGeneratedKinds: kinds generated from the real time provider
// (built into a filesystem mirror, never downloaded) pass catalog check,
// and stdterraform serves all four with no module: apply, update in place
// and by replacement, drift found on resync after the state was changed
// outside, import, an observed resource (terraform import and a
// refresh-only plan, the spec never applied), a spec the provider refuses,
// delete.
func TestTerraformGeneratedKinds(t *testing.T) {
	skipShort(t)
	tf := findTerraform(t)
	mirror, rc := providerMirror(t)

	cat := filepath.Join(t.TempDir(), "catalog")
	team := filepath.Join(cat, "tf-time")
	res := run(t, "", bin.stdworker, "kinds", "generate", "--provider", "hashicorp/time@0.14.2", "--mirror", mirror,
		"--terraform", tf, "--out", team, "--owner", "tf-time", "--resync-interval", "3")
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	for _, kind := range timeTypes {
		if !strings.Contains(res.stdout, "kind "+kind+"/v1 created") {
			t.Errorf("kinds generate printed %q; want %s/v1 created", res.stdout, kind)
		}
	}
	if res := run(t, "", bin.conctl, "catalog", "check", cat); res.code != 0 {
		t.Fatalf("catalog check of the generated kinds: %s", res)
	}

	d := startDev(t)
	var config strings.Builder
	config.WriteString("kinds:\n")
	for _, kind := range timeTypes {
		d.apply(t, string(mustRead(t, filepath.Join(team, kind, "v1.yaml"))))
		fmt.Fprintf(&config, "  - kind: %s\n    version: 1\n    provider: stdterraform\n    settings: {binary: %q, env: {TF_CLI_CONFIG_FILE: %q}}\n", kind, tf, rc)
	}
	stateDir := t.TempDir()
	w := d.stdworker(t, "--config", writeFile(t, t.TempDir(), "stdworker.yaml", config.String(), 0o644), "--state-dir", stateDir)
	w.waitOutput(t, "kind=tf.time.static@1", 30*time.Second)

	d.apply(t, `type: resource
kind: tf.time.static
kind_version: 1
name: launch
spec: {rfc3339: "2026-12-01T09:00:00Z"}
---
type: resource
kind: tf.time.offset
kind_version: 1
name: week
spec: {base_rfc3339: "2026-12-01T09:00:00Z", offset_days: 7}
---
type: resource
kind: tf.time.rotating
kind_version: 1
name: rotation
spec: {rfc3339: "2026-12-01T09:00:00Z", rotation_years: 5}
---
type: resource
kind: tf.time.sleep
kind_version: 1
name: pause
spec: {create_duration: 1s}
---
type: resource
kind: tf.time.static
kind_version: 1
name: adopted
spec: {import_id: "2020-02-12T06:36:13Z", rfc3339: "2020-02-12T06:36:13Z"}
---
type: resource
kind: tf.time.static
kind_version: 1
name: watched
management_policy: observe
import: {id: "2021-06-01T00:00:00Z"}
spec: {rfc3339: "2030-01-01T00:00:00Z"}
---
type: resource
kind: tf.time.static
kind_version: 1
name: bad
spec: {rfc3339: yesterday}
`)
	wantStatus := map[string]map[string]any{
		"tf.time.static/launch":     {"rfc3339": "2026-12-01T09:00:00Z", "year": float64(2026)},
		"tf.time.offset/week":       {"rfc3339": "2026-12-08T09:00:00Z", "day": float64(8)},
		"tf.time.rotating/rotation": {"rotation_rfc3339": "2031-12-01T09:00:00Z"},
		"tf.time.sleep/pause":       {"id": nil},
		"tf.time.static/adopted":    {"unix": float64(1581489373)},
		// Observed: imported and refreshed, never converged on its spec.
		"tf.time.static/watched": {"unix": float64(1622505600), "rfc3339": "2021-06-01T00:00:00Z"},
	}
	for key, want := range wantStatus {
		kind, name, _ := strings.Cut(key, "/")
		st := statusOf(t, d.waitPhase(t, kind, name, client.PhaseReady, 2*time.Minute))
		for field, v := range want {
			if got, ok := st[field]; !ok || (v != nil && got != v) {
				t.Errorf("%s status.%s = %v; want %v", key, field, got, v)
			}
		}
		meta, _ := st["terraform"].(map[string]any)
		if !strings.HasPrefix(fmt.Sprint(meta["state"]), "local ") || meta["address"] == nil {
			t.Errorf("%s status.terraform = %v; want the state and the address", key, meta)
		}
	}
	watched := d.get(t, "tf.time.static", "watched")
	if c := condition(watched, "ChangedOutside"); c == nil || watched.GetEffectiveManagementPolicy() != "observe" {
		t.Errorf("tf.time.static/watched: managed %q, ChangedOutside %v; want observe and the refresh's condition", watched.GetEffectiveManagementPolicy(), c)
	}
	r := d.waitPhase(t, "tf.time.static", "bad", client.PhaseFailed, 2*time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "spec.rfc3339: Invalid RFC3339 String Value") {
		t.Errorf("tf.time.static/bad failure %v: want terminal, with the provider's diagnostic on spec.rfc3339", f)
	}

	// In place: a sleep's create_duration; by replacement: a static's rfc3339.
	d.apply(t, "type: resource\nkind: tf.time.sleep\nkind_version: 1\nname: pause\nspec: {create_duration: 2s}\n")
	d.waitFor(t, "tf.time.sleep", "pause", "Ready, changed in place", time.Minute, func(r *convergev1.Resource) bool {
		c := condition(r, "Replaced")
		return r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() == r.GetGeneration() && c != nil && c.GetReason() == "InPlace"
	})
	d.apply(t, "type: resource\nkind: tf.time.static\nkind_version: 1\nname: launch\nspec: {rfc3339: \"2027-01-01T00:00:00Z\"}\n")
	r = d.waitFor(t, "tf.time.static", "launch", "Ready, replaced", time.Minute, func(r *convergev1.Resource) bool {
		c := condition(r, "Replaced")
		return r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() == r.GetGeneration() && c != nil && c.GetStatus() == "True"
	})
	if c := condition(r, "Replaced"); !strings.Contains(c.GetMessage(), "spec.rfc3339 forces replacement") {
		t.Errorf("Replaced condition %v: want it to name spec.rfc3339", c)
	}
	if st := statusOf(t, r); st["year"] != float64(2027) {
		t.Errorf("tf.time.static/launch after the replacement: year %v; want 2027", st["year"])
	}
	wantReplacingEvent(t, d, r)

	// Drift: the state changed outside; the next resync finds and corrects it.
	statePath, _ := strings.CutPrefix(statusOf(t, d.get(t, "tf.time.offset", "week"))["terraform"].(map[string]any)["state"].(string), "local ")
	edited := strings.ReplaceAll(string(mustRead(t, statePath)), "2026-12-01T09:00:00Z", "2025-12-01T09:00:00Z")
	if err := os.WriteFile(statePath, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	r = d.waitFor(t, "tf.time.offset", "week", "Drift True", time.Minute, func(r *convergev1.Resource) bool {
		c := condition(r, "Drift")
		return c != nil && c.GetStatus() == "True"
	})
	if st := statusOf(t, r); st["rfc3339"] != "2026-12-08T09:00:00Z" {
		t.Errorf("tf.time.offset/week after the drift was corrected: rfc3339 %v; want the spec's 2026-12-08T09:00:00Z", st["rfc3339"])
	}

	for key := range wantStatus {
		kind, name, _ := strings.Cut(key, "/")
		st := statusOf(t, d.get(t, kind, name))
		path, _ := strings.CutPrefix(st["terraform"].(map[string]any)["state"].(string), "local ")
		if res := d.conctl(t, "", "delete", "resource", key, "--wait"); res.code != 0 {
			t.Fatalf("%s", res)
		}
		d.waitGoneResource(t, kind, name, 2*time.Minute)
		want := 0 // destroyed
		if key == "tf.time.static/watched" {
			want = 1 // observed: forgotten, never destroyed
		}
		if n := stateResources(t, path); n != want {
			t.Errorf("%s: the state after delete holds %d resources; want %d", key, n, want)
		}
	}
}

// wantReplacingEvent checks that the worker said, in an event recorded
// while the task ran, that it was replacing tf.time.static/launch and why:
// at the replacing generation, after the spec change and before the
// result turned the Replaced condition True.
func wantReplacingEvent(t *testing.T, d *dev, r *convergev1.Resource) {
	t.Helper()
	events, err := d.api.ListEvents(t.Context(), &convergev1.ListEventsRequest{Namespace: "default", Kind: "tf.time.static", Name: "launch"})
	if err != nil {
		t.Fatal(err)
	}
	var replacing, specChanged *convergev1.Event
	for _, e := range events.GetEvents() { // newest first
		switch {
		case replacing == nil && e.GetReason() == "Replacing":
			replacing = e
		case specChanged == nil && e.GetReason() == "SpecChanged" && e.GetGeneration() == r.GetGeneration():
			specChanged = e
		}
	}
	if replacing == nil || specChanged == nil {
		t.Fatalf("events of tf.time.static/launch %v: want SpecChanged and Replacing at generation %d", events.GetEvents(), r.GetGeneration())
	}
	if replacing.GetType() != "Warning" || replacing.GetGeneration() != r.GetGeneration() || !strings.HasPrefix(replacing.GetActor(), "worker:") ||
		!strings.Contains(replacing.GetMessage(), "time_static.this") || !strings.Contains(replacing.GetMessage(), "spec.rfc3339") {
		t.Errorf("Replacing event %v: want a Warning by the worker at generation %d naming time_static.this and spec.rfc3339", replacing, r.GetGeneration())
	}
	applied := condition(r, "Replaced").GetLastTransitionTime().AsTime()
	if replacing.GetId() < specChanged.GetId() || !replacing.GetTime().AsTime().Before(applied) {
		t.Errorf("Replacing event (id %d at %s) is not between the spec change (id %d) and the applied result (Replaced True at %s)",
			replacing.GetId(), replacing.GetTime().AsTime(), specChanged.GetId(), applied)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTerraformGeneratedKindsWithoutConfig: stdworker with no
// configuration file serves the generated kinds the server has, their
// binary and provider mirror coming from the kind's provider config.
func TestTerraformGeneratedKindsWithoutConfig(t *testing.T) {
	skipShort(t)
	tf := findTerraform(t)
	_, rc := providerMirror(t)
	d := startDev(t)
	d.apply(t, string(mustRead(t, repoPath(t, "catalog/tf-time/tf.time.sleep/v1.yaml"))))
	d.apply(t, fmt.Sprintf("type: providerconfig\nkind: tf.time.sleep\nkind_version: 1\nname: default\nconfig: {binary: %q, env: {TF_CLI_CONFIG_FILE: %q}}\n", tf, rc))
	w := d.stdworker(t)
	w.waitOutput(t, "kind=tf.time.sleep@1", 30*time.Second)
	d.apply(t, "type: resource\nkind: tf.time.sleep\nkind_version: 1\nname: nap\nspec: {create_duration: 1s}\n")
	st := statusOf(t, d.waitPhase(t, "tf.time.sleep", "nap", client.PhaseReady, 2*time.Minute))
	if meta, _ := st["terraform"].(map[string]any); meta["address"] != "time_sleep.this" {
		t.Errorf("status %v: want the run's report", st)
	}
	if res := d.conctl(t, "", "delete", "resource", "tf.time.sleep/nap", "--wait"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	d.waitGoneResource(t, "tf.time.sleep", "nap", 2*time.Minute)
}

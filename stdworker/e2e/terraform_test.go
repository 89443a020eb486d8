//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// terraform is what scripts/find-terraform.sh found, once per test binary.
var terraform struct {
	once       sync.Once
	path, skip string
}

// findTerraformTimeout bounds find-terraform.sh, which may build OpenTofu
// (minutes, once) when no binary is on PATH.
const findTerraformTimeout = 20 * time.Minute

// findTerraform runs scripts/find-terraform.sh (terraform or tofu on PATH,
// else an OpenTofu it builds once) and returns the binary, or skips the
// test with the script's reason.
func findTerraform(t *testing.T) string {
	t.Helper()
	script := repoPath(t, "scripts/find-terraform.sh")
	terraform.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), findTerraformTimeout)
		defer cancel()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "bash", script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		terraform.path = strings.TrimSpace(string(out))
		if err != nil || terraform.path == "" {
			terraform.skip = fmt.Sprintf("skipped: no terraform or tofu: scripts/find-terraform.sh: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
	})
	if terraform.skip != "" {
		t.Skip(terraform.skip)
	}
	return terraform.path
}

// tfResource is a std.terraform resource applying the example module.
func tfResource(t *testing.T, name, source string, vars map[string]any) string {
	t.Helper()
	fields := map[string]any{"source": source}
	if vars != nil {
		fields["variables"] = vars
	}
	spec, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("type: resource\nkind: std.terraform\nkind_version: 1\nname: %s\nspec: %s\n", name, spec)
}

// stateResources counts the resources in a local state file.
func stateResources(t *testing.T, path string) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the state: %v", err)
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("state %s: %v", path, err)
	}
	return len(st.Resources)
}

// TestTerraformModuleLifecycle: a module applied through std.terraform
// becomes Ready with its outputs (the sensitive one redacted), a changed
// variable re-applies, a module with a syntax error fails terminally with
// terraform's message, and deleting the resource destroys what it made,
// leaving an empty state.
func TestTerraformModuleLifecycle(t *testing.T) {
	tf := findTerraform(t)
	d := startDev(t)
	if out := d.kindsApply(t); !strings.Contains(out, "kind std.terraform/v1 created") {
		t.Fatalf("stdworker kinds apply printed %q; want std.terraform created", out)
	}
	d.apply(t, fmt.Sprintf("type: providerconfig\nkind: std.terraform\nkind_version: 1\nname: default\nconfig: {binary: %q}\n", tf))
	w := d.stdworker(t, "--kinds", "std.terraform@1")
	w.waitOutput(t, "kind=std.terraform@1", 30*time.Second)

	module := repoPath(t, "stdworker/examples/stdterraform/module")
	d.apply(t, tfResource(t, "shop", module, map[string]any{"site": "shop", "replicas": 2})+"---\n"+
		tfResource(t, "broken", repoPath(t, "stdworker/examples/stdterraform/broken"), nil))

	r := d.waitPhase(t, "std.terraform", "shop", client.PhaseReady, 2*time.Minute)
	st := statusOf(t, r)
	outputs, _ := st["outputs"].(map[string]any)
	if outputs["url"] != "https://shop.example.com/" || fmt.Sprint(outputs["servers"]) != "[shop-web-0 shop-web-1]" {
		t.Errorf("outputs %v: want the url and two servers", outputs)
	}
	if outputs["admin_token"] != "(sensitive)" {
		t.Errorf("the sensitive output admin_token is %v in status; want it redacted", outputs["admin_token"])
	}
	if v, _ := st["terraform_version"].(string); v == "" {
		t.Errorf("status %v has no terraform_version", st)
	}
	if at, _ := st["applied_at"].(string); at == "" {
		t.Errorf("status %v has no applied_at", st)
	} else if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Errorf("status.applied_at %q: %v", at, err)
	}
	where, _ := st["state"].(string)
	statePath, ok := strings.CutPrefix(where, "local ")
	if !ok {
		t.Fatalf("status.state = %q; want the local backend's state file", where)
	}
	if n := stateResources(t, statePath); n != 1 {
		t.Errorf("state after apply holds %d resources; want 1", n)
	}

	// A changed variable applies again.
	d.apply(t, tfResource(t, "shop", module, map[string]any{"site": "shop", "replicas": 3}))
	d.waitFor(t, "std.terraform", "shop", "three servers", 2*time.Minute, func(r *convergev1.Resource) bool {
		outputs, _ := statusOf(t, r)["outputs"].(map[string]any)
		servers, _ := outputs["servers"].([]any)
		return r.GetPhase() == client.PhaseReady && len(servers) == 3
	})

	r = d.waitPhase(t, "std.terraform", "broken", client.PhaseFailed, 2*time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "Unclosed configuration block (main.tf line 3)") {
		t.Errorf("failure %v: want a terminal failure with terraform's message and the file and line", f)
	}

	for _, name := range []string{"shop", "broken"} {
		if res := d.conctl(t, "", "delete", "resource", "std.terraform/"+name, "--wait"); res.code != 0 {
			t.Fatalf("%s", res)
		}
		d.waitGoneResource(t, "std.terraform", name, 2*time.Minute)
	}
	if n := stateResources(t, statePath); n != 0 {
		t.Errorf("state after delete holds %d resources; want none (destroyed)", n)
	}
}

// waitGoneResource waits until default/kind/name no longer exists.
func (d *dev) waitGoneResource(t *testing.T, kind, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, err := d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: kind, Name: name})
		if connect.CodeOf(err) == connect.CodeNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s still exists after %s (last error %v)", kind, name, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestTerraformExample runs stdworker/examples/stdterraform/run.sh, the
// one-command demo, against the binaries under test.
func TestTerraformExample(t *testing.T) {
	begin(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the stdterraform example needs jq, which is not on PATH")
	}
	findTerraform(t)
	res := runExample(t, "stdworker/examples/stdterraform/run.sh")
	for _, want := range []string{
		"admin_token: (sensitive)", "url: https://shop.example.com/",
		`Message:          spec.source "./broken": Unclosed configuration block (main.tf line 3)`,
		"terraform.tfstate: 1\n", "terraform.tfstate: 0\n",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("run.sh printed no %q\n%s", want, res)
		}
	}
}

// TestTerraformPGBackend: with the pg backend in the provider config, a
// module's state lives in PostgreSQL (here converge dev's own database),
// one schema per resource, and is emptied by the destroy.
func TestTerraformPGBackend(t *testing.T) {
	tf := findTerraform(t)
	d := startDev(t)
	dbURL := devDatabaseURL(t, d)
	d.kindsApply(t)
	d.apply(t, fmt.Sprintf("type: providerconfig\nkind: std.terraform\nkind_version: 1\nname: default\nconfig: {binary: %q, backend: {type: pg, conn_str: %q}}\n", tf, dbURL))
	w := d.stdworker(t, "--kinds", "std.terraform@1")
	w.waitOutput(t, "kind=std.terraform@1", 30*time.Second)

	d.apply(t, tfResource(t, "inpg", repoPath(t, "stdworker/examples/stdterraform/module"), map[string]any{"site": "pg"}))
	r := d.waitPhase(t, "std.terraform", "inpg", client.PhaseReady, 2*time.Minute)
	where, _ := statusOf(t, r)["state"].(string)
	schema, ok := strings.CutPrefix(where, "pg schema ")
	if !ok {
		t.Fatalf("status.state = %q; want the pg backend's schema", where)
	}
	schema, _, _ = strings.Cut(schema, ",")
	if n := pgStateResources(t, dbURL, schema); n != 1 {
		t.Errorf("the pg state holds %d resources after apply; want 1", n)
	}
	if res := d.conctl(t, "", "delete", "resource", "std.terraform/inpg", "--wait"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	d.waitGoneResource(t, "std.terraform", "inpg", 2*time.Minute)
	if n := pgStateResources(t, dbURL, schema); n != 0 {
		t.Errorf("the pg state holds %d resources after delete; want none", n)
	}
}

// devDatabaseURL reads the database URL converge dev printed.
func devDatabaseURL(t *testing.T, d *dev) string {
	t.Helper()
	d.proc.waitOutput(t, "Database:", 30*time.Second)
	for _, line := range strings.Split(d.proc.output(), "\n") {
		if url, ok := strings.CutPrefix(strings.TrimSpace(line), "Database:"); ok {
			return strings.TrimSpace(url)
		}
	}
	t.Fatalf("converge dev printed no database URL:\n%s", d.proc.output())
	return ""
}

// pgStateResources counts the resources of the default workspace's state
// in schema.
func pgStateResources(t *testing.T, url, schema string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	q := fmt.Sprintf(`SELECT coalesce(jsonb_array_length(data::jsonb -> 'resources'), 0) FROM %s.states WHERE name = 'default'`, pgx.Identifier{schema}.Sanitize())
	if err := conn.QueryRow(t.Context(), q).Scan(&n); err != nil {
		t.Fatalf("reading the state in schema %s: %v", schema, err)
	}
	return n
}

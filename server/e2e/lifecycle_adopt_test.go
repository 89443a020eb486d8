//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// vpcKind is the lifecycleworker's vpc: a leaf over objects in its
// -objects-dir, with an observe reaction and a teardown.
const vpcKind = `type: manifest
kind: vpc
kind_version: 1
owner: e2e
finalizer: vpc/delete
spec_schema:
  type: object
  properties:
    cidr: {type: string}
status_schema:
  type: object
  properties:
    id: {type: string}
    cidr: {type: string}
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
  - {name: observe, trigger: observe, emits: [status, conditions]}
  - {name: delete, trigger: deleteRequested, emits: [finalizer]}
policy: {resync_interval_seconds: 1}
`

// putObject makes the external object id exist with cidr.
func (l *lifecycle) putObject(id, cidr string) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.objectsDir, id+".json"), []byte(`{"cidr":"`+cidr+`"}`), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// object reads the external object id as it is now.
func (l *lifecycle) object(id string) string {
	l.t.Helper()
	raw, err := os.ReadFile(filepath.Join(l.objectsDir, id+".json"))
	if err != nil {
		l.t.Fatalf("object %s: %v", id, err)
	}
	return string(raw)
}

// TestObserveThenManage: a resource importing an existing object under
// management policy observe reports the object's state and never changes
// it (the worker ran only observe, re-observing each second); promoted to
// full with conctl manage, the one recorded change, it is then updated
// by a spec change; demoted again and deleted, the object stays.
func TestObserveThenManage(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(vpcKind, "kind vpc/v1 created")
	l.putObject("vpc-0abc", "10.0.0.0/16")
	l.mustApply("type: resource\nkind: vpc\nkind_version: 1\nname: main\nmanagement_policy: observe\n" +
		"import: {id: vpc-0abc}\nspec: {cidr: 10.9.0.0/16}\n")
	r := waitResource(t, l.srv.api, "vpc", "main", "observed status", lifecycleTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["cidr"].GetStringValue() == "10.0.0.0/16"
	})
	if r.GetEffectiveManagementPolicy() != "observe" || r.GetImport().GetId() != "vpc-0abc" {
		t.Fatalf("the observed vpc: managed %q, import %v", r.GetEffectiveManagementPolicy(), r.GetImport())
	}
	// It is re-observed (resync_interval_seconds: 1), still only observed.
	l.waitRecord("a second observe of vpc/main", func(lcRecord) bool { return len(l.tasks("vpc", "main", "observe")) >= 2 })
	for _, rec := range l.tasks("vpc", "main", "") {
		if rec.Trigger != "observe" || rec.ImportID != "vpc-0abc" {
			t.Errorf("while observed the worker ran %s (import %q); want only observe, importing vpc-0abc", rec, rec.ImportID)
		}
	}
	if got := l.object("vpc-0abc"); got != `{"cidr":"10.0.0.0/16"}` {
		t.Fatalf("the observed object changed: %s", got)
	}

	out := l.mustCtl("manage", "vpc/main", "full", "--reason", "reviewed")
	if !strings.Contains(out.stdout, "resource default/vpc/main managed: full") {
		t.Errorf("conctl manage printed:\n%s", out)
	}
	promoted := time.Now()
	// Promoted, its reconcile runs in full and converges the object on the spec.
	waitResource(t, l.srv.api, "vpc", "main", "managed status", lifecycleTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["cidr"].GetStringValue() == "10.9.0.0/16"
	})
	if got := l.object("vpc-0abc"); got != `{"cidr":"10.9.0.0/16"}` {
		t.Fatalf("the promoted object: %s; want it converged on the spec", got)
	}
	l.mustApply("type: resource\nkind: vpc\nkind_version: 1\nname: main\nmanagement_policy: full\n" +
		"import: {id: vpc-0abc}\nspec: {cidr: 10.8.0.0/16}\n")
	l.waitSynced("vpc", "main", 2)
	if got := l.object("vpc-0abc"); got != `{"cidr":"10.8.0.0/16"}` {
		t.Fatalf("the updated object: %s", got)
	}
	for _, rec := range l.tasks("vpc", "main", "") {
		if rec.At.After(promoted) && rec.Trigger == "observe" {
			t.Errorf("after the promotion the worker ran %s", rec)
		}
	}
	events := l.mustCtl("events", "vpc/main")
	if !strings.Contains(events.stdout, "ManagementPolicyChanged") || !strings.Contains(events.stdout, "observe -> full: reviewed") {
		t.Errorf("events do not record the policy change:\n%s", events.stdout)
	}

	// Observed again and deleted: forgotten, its object left in place.
	l.mustCtl("manage", "vpc/main", "observe")
	l.mustCtl("delete", "resource", "vpc/main")
	waitResource(t, l.srv.api, "vpc", "main", "gone", lifecycleTimeout, func(r *convergev1.Resource) bool { return r == nil })
	if n := len(l.tasks("vpc", "main", "deleteRequested")); n != 0 {
		t.Fatalf("deleting the observed vpc ran its teardown %d time(s)", n)
	}
	if got := l.object("vpc-0abc"); got != `{"cidr":"10.8.0.0/16"}` {
		t.Fatalf("the object after its observed resource was deleted: %s", got)
	}
}

// TestImportMissingObject: importing an id the handler does not find is a
// terminal failure naming the id.
func TestImportMissingObject(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(vpcKind, "kind vpc/v1 created")
	l.mustApply("type: resource\nkind: vpc\nkind_version: 1\nname: ghost\nimport: {id: vpc-missing}\nspec: {cidr: 10.0.0.0/16}\n")
	r := l.waitPhase("vpc", "ghost", client.PhaseFailed)
	f := r.GetFailure()
	if !f.GetTerminal() || f.GetReason() != "ImportNotFound" || !strings.Contains(f.GetMessage(), `"vpc-missing"`) {
		t.Fatalf("the failure: %+v; want terminal, ImportNotFound, naming vpc-missing", f)
	}
	if n := len(l.tasks("vpc", "ghost", "")); n != 1 {
		t.Errorf("the worker ran %d tasks for vpc/ghost; a terminal failure runs once", n)
	}
	if _, err := os.Stat(filepath.Join(l.objectsDir, "vpc-missing.json")); err == nil {
		t.Error("a failed import created the object")
	}
}

// TestBulkImport: conctl import adopts 1,000 existing objects from a CSV
// file, printing progress and a summary.
func TestBulkImport(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(vpcKind, "kind vpc/v1 created")
	const n = 1000
	var csv strings.Builder
	csv.WriteString("kind,name,id\n")
	for i := range n {
		id := fmt.Sprintf("vpc-%04d", i)
		l.putObject(id, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
		fmt.Fprintf(&csv, "vpc,net-%04d,%s\n", i, id)
	}
	file := filepath.Join(t.TempDir(), "vpcs.csv")
	if err := os.WriteFile(file, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := l.mustCtl("import", file, "--timeout", "3m")
	took := time.Since(start)
	for _, want := range []string{"applied 1000/1000", "waiting: ", "1000 of 1000 resources ready", "import: 1000 rows in ", ": 1000 adopted (Ready), 0 failed, 0 not settled"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("conctl import printed no %q:\n%s", want, out.stdout)
		}
	}
	t.Logf("imported %d objects in %s", n, took.Round(time.Millisecond))
	r := l.get("vpc/net-0513")
	if r.GetEffectiveManagementPolicy() != "observe" || r.GetImport().GetId() != "vpc-0513" ||
		r.GetStatus().GetFields()["cidr"].GetStringValue() != "10.2.1.0/24" {
		t.Fatalf("vpc/net-0513 after the import: %s", describe(r))
	}
	for _, rec := range l.records() {
		if rec.Event == "task" && rec.Trigger != "observe" {
			t.Fatalf("the import ran %s; an observed import runs only observe", rec)
		}
	}

	// A bad row is refused before anything is applied, naming its line and field.
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("kind,name,id\nvpc,ok,vpc-0001\nvpc,,vpc-0002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := l.ctl("import", bad)
	if res.code == 0 || !strings.Contains(res.stderr, "bad.csv: row at line 3: name: empty") {
		t.Fatalf("a row without a name:\n%s", res)
	}
}

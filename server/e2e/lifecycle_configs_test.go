//go:build unix

package e2e

import (
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// bucketKind is served by a reaction registered with NeedsConfig: its
// worker is not ready until the kind version has a default config.
const bucketKind = `type: manifest
kind: bucket
kind_version: 1
owner: e2e
spec_schema:
  type: object
  properties:
    fail: {type: string}
    report: {type: object}
config_schema:
  type: object
  additionalProperties: false
  properties:
    region: {type: string}
    tier: {type: string, enum: [standard, glacier]}
    account: {type: string, pattern: "^[0-9]{12}$"}
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
`

// bucketConfig is a providerconfig document of bucket v1.
func bucketConfig(name, config string) string {
	return "type: providerconfig\nkind: bucket\nkind_version: 1\nname: " + name + "\nconfig: " + config + "\n"
}

// TestProviderConfigs: a worker that needs a default config parks its
// kind's resources until there is one; then they reconcile with it; a
// resource naming a config gets the default with its keys on top; an
// edit of the default reaches the running worker at once and the next
// reconcile; a config its schema refuses is refused naming the path.
func TestProviderConfigs(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(bucketKind, "kind bucket/v1 created")
	l.mustApply("type: resource\nkind: bucket\nkind_version: 1\nname: invoices\nspec: {}\n", "resource default/bucket/invoices created")

	// Parked: queued, never run, and saying why.
	parked := waitResource(t, l.srv.api, "bucket", "invoices", "parked, its worker not ready", lifecycleTimeout, func(r *convergev1.Resource) bool {
		return condition(r, "WorkerAvailable").GetReason() == "NotReady"
	})
	c := condition(parked, "WorkerAvailable")
	if parked.GetPhase() != client.PhaseReconciling || parked.GetReconciles() != 0 || parked.GetFailure() != nil ||
		c.GetStatus() != "False" || c.GetReason() != "NotReady" || !strings.Contains(c.GetMessage(), "no default provider config yet") {
		t.Fatalf("a bucket before any default config: %s; want Reconciling, never reconciled, no failure, "+
			"WorkerAvailable=False NotReady saying there is no default provider config yet", explain(parked))
	}
	report := l.mustCtl("describe", "resource", "bucket/invoices").stdout
	if !containsLine(report, "WorkerAvailable", "False", "NotReady") || !containsLine(report, "Phase:", "Reconciling") {
		t.Errorf("describe of a parked bucket: want phase Reconciling and a WorkerAvailable False NotReady condition:\n%s", report)
	}
	if got := l.tasks("bucket", "invoices", ""); len(got) != 0 {
		t.Errorf("the worker ran tasks of a bucket before its kind had a default config:\n%s", renderLC(got))
	}

	// The default config: pushed to the worker, the bucket reconciles with it.
	l.mustApply(bucketConfig("default", "{region: eu-central-1, tier: standard}"), "providerconfig bucket/v1/default created")
	first := map[string]any{"region": "eu-central-1", "tier": "standard"}
	l.waitRecord("the default config pushed (OnConfig)", func(r lcRecord) bool {
		return r.Event == "config" && r.Kind == "bucket" && sameJSON(configOf(t, r.Config), first)
	})
	checkSeenConfig(t, l.waitSynced("bucket", "invoices", 1), first)

	// A named config on top of the default.
	l.mustApply(bucketConfig("archive", `{account: "210987654321", tier: glacier}`)+"---\n"+
		"type: resource\nkind: bucket\nkind_version: 1\nname: cold\nprovider_config: archive\nspec: {}\n",
		"providerconfig bucket/v1/archive created", "resource default/bucket/cold created")
	checkSeenConfig(t, l.waitSynced("bucket", "cold", 1), map[string]any{"region": "eu-central-1", "account": "210987654321", "tier": "glacier"})
	if report := l.mustCtl("describe", "resource", "bucket/cold").stdout; !containsLine(report, "Provider config:", "archive") {
		t.Errorf("describe of a bucket using the archive config does not name it:\n%s", report)
	}

	// Editing the default reaches the running worker, and the next
	// reconcile of each bucket.
	l.mustApply(bucketConfig("default", "{region: us-east-1, tier: standard}"), "providerconfig bucket/v1/default configured")
	second := map[string]any{"region": "us-east-1", "tier": "standard"}
	l.waitRecord("the edited default config pushed (OnConfig)", func(r lcRecord) bool {
		return r.Event == "config" && r.Kind == "bucket" && sameJSON(configOf(t, r.Config), second)
	})
	l.mustCtl("reconcile", "bucket/invoices", "--reason", "pick up the new region", "--wait")
	checkSeenConfig(t, l.get("bucket/invoices"), second)
	l.mustCtl("reconcile", "bucket/cold", "--reason", "pick up the new region", "--wait")
	checkSeenConfig(t, l.get("bucket/cold"), map[string]any{"region": "us-east-1", "account": "210987654321", "tier": "glacier"})

	// Configs the schema refuses, alone or merged onto the default.
	for _, bad := range []struct{ doc, path string }{
		{bucketConfig("default", "{region: 5, tier: standard}"), "config.region"},
		{bucketConfig("archive", "{account: acme, tier: glacier}"), "config.account"},
		{bucketConfig("deep", "{tier: deep}"), "config.tier"},
	} {
		res := l.apply(bad.doc)
		if res.code == 0 || !strings.Contains(res.stderr, bad.path) {
			t.Errorf("applying a config its schema refuses at %s: want a non-zero exit naming %s:\n%s", bad.path, bad.path, res)
		}
	}
	var def convergev1.ProviderConfig
	out := l.mustCtl("get", "providerconfig", "bucket/v1/default", "-o", "json").stdout
	unmarshalProto(t, out, &def)
	if !sameJSON(def.GetConfig().AsMap(), second) {
		t.Errorf("the default config after refused applies: %v; want %v", def.GetConfig().AsMap(), second)
	}
	if res := l.ctl("get", "providerconfig", "bucket/v1/deep"); res.code == 0 {
		t.Errorf("a refused named config exists:\n%s", res)
	}
}

// checkSeenConfig checks the effective config a bucket's status says the
// worker saw.
func checkSeenConfig(t *testing.T, r *convergev1.Resource, want map[string]any) {
	t.Helper()
	if _, _, _, got := seen(t, r); !sameJSON(got, want) {
		t.Errorf("%s/%s was reconciled with config %v; want %v", r.GetKind(), r.GetName(), got, want)
	}
}

// containsLine reports whether some line of text holds every one of words.
func containsLine(text string, words ...string) bool {
	for _, line := range strings.Split(text, "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(line, w)
		}
		if all {
			return true
		}
	}
	return false
}

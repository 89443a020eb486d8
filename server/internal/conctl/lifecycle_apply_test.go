package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"connectrpc.com/connect"
)

const providerConfigDoc = `type: providerconfig
kind: greeting
kind_version: 1
name: default
config: {region: eu-west-1, account: "123"}
`

const reactorBindingDoc = `type: reactorbinding
name: notify-failures
watch_kind: greeting
transitions: [failed, degraded]
reactor_kind: notifier
reactor_kind_version: 1
`

// Documents go in type order, whatever order they are written in: a config
// needs its kind, a resource may name a config.
func TestApplyOrderAndResultLines(t *testing.T) {
	f, url := newFake(t)
	resource := "type: resource\nkind: greeting\nkind_version: 1\nname: hello\nprovider_config: default\nspec: {greeting: hi}\n"
	docs := strings.Join([]string{resource, reactorBindingDoc, providerConfigDoc, kindDoc}, "---\n")
	ctx := testContext(t)

	r := run(ctx, url, docs, "apply", "-f", "-")
	want := "" +
		"kind greeting/v1 created\n" +
		"providerconfig greeting/v1/default created\n" +
		"reactorbinding notify-failures created\n" +
		"resource default/greeting/hello created\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	calls := strings.Join(f.callLog(), "|")
	if calls != "ApplyKind greeting/1|ApplyProviderConfig greeting/1/default|ApplyReactorBinding notify-failures|ApplyResources 1" {
		t.Fatalf("calls = %s", calls)
	}
	f.mu.Lock()
	pc := f.resources[rkey("default", "greeting", "hello")].GetProviderConfig()
	region := f.configs["greeting/1/default"].GetConfig().GetFields()["region"].GetStringValue()
	transitions := f.bindings["notify-failures"].GetTransitions()
	f.mu.Unlock()
	if pc != "default" || region != "eu-west-1" || strings.Join(transitions, ",") != "failed,degraded" {
		t.Fatalf("server got provider_config %q, region %q, transitions %v", pc, region, transitions)
	}

	changed := strings.Replace(docs, "failed, degraded", "failed", 1)
	r = run(ctx, url, changed, "apply", "-f", "-")
	want = "" +
		"kind greeting/v1 configured\n" +
		"providerconfig greeting/v1/default unchanged\n" +
		"reactorbinding notify-failures configured\n" +
		"resource default/greeting/hello unchanged\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("second apply: exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestApplyLifecycleReportAsJSON(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, providerConfigDoc+"---\n"+reactorBindingDoc, "apply", "-f", "-", "-o", "json")
	var report []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("exit %d: stdout is not JSON: %v\n%s", r.code, err, r.stdout)
	}
	if len(report) != 2 {
		t.Fatalf("report = %v", report)
	}
	pc, rb := report[0], report[1]
	if pc["type"] != "providerconfig" || pc["kind"] != "greeting" || pc["kind_version"] != float64(1) || pc["name"] != "default" || pc["result"] != "created" {
		t.Errorf("provider config line = %v", pc)
	}
	if _, hasKind := rb["kind"]; rb["type"] != "reactorbinding" || rb["name"] != "notify-failures" || hasKind {
		t.Errorf("reactor binding line = %v", rb)
	}
}

func TestApplyRefusesDuplicateConfigsAndBindings(t *testing.T) {
	f, url := newFake(t)
	docs := providerConfigDoc + "---\n" + reactorBindingDoc + "---\n" +
		strings.Replace(providerConfigDoc, "eu-west-1", "us-east-1", 1) + "---\n" + reactorBindingDoc
	r := run(testContext(t), url, docs, "apply", "-f", "-")
	want := "" +
		"error: stdin: document 3 (line 14): providerconfig greeting/v1/default is also in stdin: document 1 (line 1)\n" +
		"error: stdin: document 4 (line 20): reactorbinding notify-failures is also in stdin: document 2 (line 7)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	if len(f.callLog()) != 0 {
		t.Fatal("a duplicate must apply nothing")
	}
}

func TestApplyConfigRefusedByTheServer(t *testing.T) {
	f, url := newFake(t)
	f.failing("ApplyProviderConfig", connect.CodeInvalidArgument, "config.region: value must be one of eu-west-1, us-east-1")
	r := run(testContext(t), url, providerConfigDoc+"---\n"+resourceDocs("hello"), "apply", "-f", "-")
	want := "error: stdin: document 1 (line 1): apply providerconfig greeting/v1/default: config.region: value must be one of eu-west-1, us-east-1\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	if calls := f.callLog(); len(calls) != 1 {
		t.Fatalf("calls %v: nothing after the refused config may be applied", calls)
	}
}

func TestApplyBindingToAMissingReactorKind(t *testing.T) {
	f, url := newFake(t)
	f.failing("ApplyReactorBinding", connect.CodeFailedPrecondition, "reactor_kind: kind notifier/v1 not found")
	r := run(testContext(t), url, reactorBindingDoc, "apply", "-f", "-")
	want := "error: stdin: document 1 (line 1): apply reactorbinding notify-failures: reactor_kind: kind notifier/v1 not found\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestApplyRefusesServerSetFields(t *testing.T) {
	f, url := newFake(t)
	r := run(testContext(t), url, providerConfigDoc+"revision: 4\n", "apply", "-f", "-")
	want := "error: stdin: document 1 (line 6): revision: set by the server; leave it out\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	if len(f.callLog()) != 0 {
		t.Fatal("a bad document must apply nothing")
	}
}

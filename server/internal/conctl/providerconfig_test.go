package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func addConfigs(t *testing.T, f *fakeControl) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range []*convergev1.ProviderConfig{
		{Kind: "greeting", KindVersion: 1, Name: "eu", Config: spec(t, map[string]any{"region": "eu-west-1"}), Revision: 1},
		{Kind: "greeting", KindVersion: 1, Name: "default", Description: "Shared account.\nSecond line.", Revision: 3,
			Config: spec(t, map[string]any{"region": "us-east-1", "account": "123"})},
		{Kind: "greeting", KindVersion: 2, Name: "default", Revision: 1},
		{Kind: "audit", KindVersion: 1, Name: "default", Revision: 2},
	} {
		c.CreatedAt = timestamppb.New(testNow.Add(-2 * time.Hour))
		f.configs[pcKey(c.Kind, c.KindVersion, c.Name)] = c
	}
}

func TestGetProviderConfig(t *testing.T) {
	f, url := newFake(t)
	addConfigs(t, f)
	ctx := testContext(t)
	header := "KIND       VERSION   NAME      KEYS             REVISION   AGE   DESCRIPTION\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "providerconfig", "greeting/v1/default"}, header +
			"greeting   v1        default   account,region   3          2h    Shared account.\n"},
		{[]string{"get", "pc", "greeting/1"}, header +
			"greeting   v1        default   account,region   3          2h    Shared account.\n" +
			"greeting   v1        eu        region           1          2h    -\n"},
		{[]string{"get", "providerconfigs", "greeting"}, header +
			"greeting   v1        default   account,region   3          2h    Shared account.\n" +
			"greeting   v1        eu        region           1          2h    -\n" +
			"greeting   v2        default   -                1          2h    -\n"},
	} {
		r := run(ctx, url, "", tc.args...)
		if r.code != 0 || r.stdout != tc.want {
			t.Errorf("%v: exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", tc.args, r.code, r.stdout, tc.want, r.stderr)
		}
	}

	r := run(ctx, url, "", "get", "pc", "greeting/v1/eu", "-o", "yaml")
	want := "kind: greeting\nkind_version: 1\nname: eu\nconfig:\n  region: eu-west-1\nrevision: \"1\"\ncreated_at: \"2026-11-29T10:00:00Z\"\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("-o yaml: exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
}

func TestGetProviderConfigErrors(t *testing.T) {
	f, url := newFake(t)
	addConfigs(t, f)
	ctx := testContext(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pc", "greeting/v1/nope"}, "error: get providerconfig greeting/v1/nope: provider config greeting/v1/nope not found\n"},
		{[]string{"get", "pc", "greeting/v9"}, "error: no provider configs of greeting/v9 (list them with: conctl list providerconfigs)\n"},
		{[]string{"get", "pc", "greeting/vx/default"}, "error: provider config \"greeting/vx/default\": the version must be a positive integer, e.g. greeting/v1/default\nRun 'conctl get providerconfig --help' for usage.\n"},
		{[]string{"get", "pc", "greeting/v1/a/b"}, "error: provider config \"greeting/v1/a/b\": want KIND/VERSION/NAME, e.g. greeting/v1/default\nRun 'conctl get providerconfig --help' for usage.\n"},
		{[]string{"get", "pc"}, "error: conctl get providerconfig needs KIND/VERSION/NAME, e.g. greeting/v1/default\nRun 'conctl get providerconfig --help' for usage.\n"},
	} {
		r := run(ctx, url, "", tc.args...)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant:\n%s", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

func TestListProviderConfigs(t *testing.T) {
	f, url := newFake(t)
	ctx := testContext(t)
	r := run(ctx, url, "", "list", "providerconfigs")
	if r.code != 0 || r.stdout != "" || r.stderr != "No provider configs found.\n" {
		t.Fatalf("empty: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	addConfigs(t, f)
	r = run(ctx, url, "", "list", "pc")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var ids []string
	for _, l := range lines[1:] {
		fields := strings.Fields(l)
		ids = append(ids, fields[0]+"/"+fields[1]+"/"+fields[2])
	}
	if got := strings.Join(ids, " "); got != "audit/v1/default greeting/v1/default greeting/v1/eu greeting/v2/default" {
		t.Fatalf("order = %s, want by kind, version, then default first", got)
	}

	r = run(ctx, url, "", "list", "pc", "--kind", "greeting", "--kind-version", "1", "-o", "json")
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 2 {
		t.Fatalf("-o json: exit %d, %v\n%s\nstderr: %s", r.code, err, r.stdout, r.stderr)
	}
	if calls := f.callLog(); calls[len(calls)-1] != "ListProviderConfigs greeting/1" {
		t.Fatalf("last call %q, want the filters passed to the server", calls[len(calls)-1])
	}

	r = run(ctx, url, "", "list", "pc", "--kind-version", "1")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --kind-version: needs --kind and a positive version\n") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestDeleteProviderConfig(t *testing.T) {
	f, url := newFake(t)
	addConfigs(t, f)
	ctx := testContext(t)
	r := run(ctx, url, "", "delete", "pc", "greeting/v1/eu")
	if r.code != 0 || r.stdout != "providerconfig greeting/v1/eu deleted\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(ctx, url, "", "delete", "providerconfig", "greeting/v1")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: delete providerconfig needs KIND/VERSION/NAME, e.g. greeting/v1/default: configs are deleted one at a time\n") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	f.failing("DeleteProviderConfig", connect.CodeFailedPrecondition, "provider config greeting/v1/default is used by 3 resources, e.g. default/greeting/hello")
	r = run(ctx, url, "", "delete", "pc", "greeting/v1/default")
	want := "error: delete providerconfig greeting/v1/default: provider config greeting/v1/default is used by 3 resources, e.g. default/greeting/hello\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

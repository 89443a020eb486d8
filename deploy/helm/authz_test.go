package helm_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

func TestAuthorizationOnByDefault(t *testing.T) {
	r, _ := renderSet(t, "defaults")
	s, ok := r.secrets[fullname+"-tokens"]
	if !ok {
		t.Fatalf("no generated tokens Secret; have %v", keys(r.secrets))
	}
	if got := keys(s.Data); strings.Join(got, ",") != "admin,stdworker,tokens" {
		t.Fatalf("tokens Secret keys %v, want admin, stdworker and tokens", got)
	}
	file := string(s.Data["tokens"])
	for _, id := range []string{"admin", "stdworker"} {
		tok := string(s.Data[id])
		if len(tok) != 40 || !strings.Contains(file, "\n"+tok+" "+id+"\n") {
			t.Errorf("%s: token %q (length %d) is not a 40-character token listed in the token file:\n%s", id, tok, len(tok), file)
		}
	}
	if s.Data["admin"] == nil || string(s.Data["admin"]) == string(s.Data["stdworker"]) {
		t.Error("admin and stdworker share a token")
	}
	for _, role := range []string{"control", "broker"} {
		d := r.deployment(t, fullname+"-"+role)
		c := container(t, d)
		requireArgs(t, c, "--admin-ids=admin", "--reader-ids=stdworker", "--token-file=/etc/converge/tokens/tokens")
		forbidArgPrefix(t, c, "--allow-anonymous")
		if v, ok := volume(d, "tokens"); !ok || v.Secret == nil || v.Secret.SecretName != fullname+"-tokens" {
			t.Errorf("%s: tokens volume %+v, want Secret %s-tokens", role, v, fullname)
		}
		if mountPath(c, "tokens") != "/etc/converge/tokens" {
			t.Errorf("%s: tokens mounted at %q", role, mountPath(c, "tokens"))
		}
	}
	for _, want := range []string{"Authorization is on", "get secret " + fullname + "-tokens", "{.data.admin}"} {
		if !strings.Contains(r.notes, want) {
			t.Errorf("NOTES lack %q:\n%s", want, r.notes)
		}
	}
}

func TestAuthorizationOffNeedsAnonymousConsent(t *testing.T) {
	checkRejected(t, "authorization off without anonymous")
	r, vs := renderSet(t, "authorization-off")
	checkWiring(t, r, vs.existing...)
	if len(r.secrets) != 1 {
		t.Errorf("secrets %v, want only the database's", keys(r.secrets))
	}
	for _, d := range r.deployments {
		c := container(t, d)
		forbidArgPrefix(t, c, "--token-file")
		forbidArgPrefix(t, c, "--admin-ids")
		if d.Labels["app.kubernetes.io/component"] != "stdworker" {
			requireArgs(t, c, "--allow-anonymous")
		}
	}
	if !strings.Contains(r.notes, "WARNING: authorization is off") {
		t.Errorf("NOTES do not warn that authorization is off:\n%s", r.notes)
	}
}

func TestAuthorizationValues(t *testing.T) {
	r, vs := renderSet(t, "authorization-values")
	checkWiring(t, r, vs.existing...)
	if _, ok := r.secrets[fullname+"-tokens"]; ok {
		t.Error("a tokens Secret was generated beside tokens.existingSecret")
	}
	d := r.deployment(t, fullname+"-all")
	c := container(t, d)
	requireArgs(t, c, "--admin-ids=spiffe://td/ns/ops/*", "--writer-ids=ci,spiffe://td/ns/ci/*",
		"--team=data=bob", "--team=web=spiffe://td/ns/web/*,alice", "--grant=writer:team-a-*,shared=team:web,carol",
		"--token-file=/etc/converge/tokens/file", "--grant=read-secrets:data.db,app.*=team:data",
		"--secret-key-file=/etc/converge/secret-key/secret.key")
	forbidArgPrefix(t, c, "--reader-ids")
	if v, _ := volume(d, "tokens"); v.Secret == nil || v.Secret.SecretName != "my-tokens" {
		t.Errorf("tokens volume %+v, want Secret my-tokens", v)
	}
	if v, _ := volume(d, "secret-key"); v.Secret == nil || v.Secret.SecretName != "converge-key" {
		t.Errorf("secret-key volume %+v, want Secret converge-key", v)
	}
	w := r.deployment(t, fullname+"-stdworker")
	requireArgs(t, container(t, w), "--token-file=/etc/stdworker/token/tok")
	if v, _ := volume(w, "token"); v.Secret == nil || v.Secret.SecretName != "sw-token" {
		t.Errorf("stdworker token volume %+v, want Secret sw-token", v)
	}

	for _, name := range []string{"no roles", "anonymous and on", "identity named key", "identity with a space", "read-secrets grant naming namespaces"} {
		checkRejected(t, name)
	}
}

// stdworker calls the control API (GetKind) and dials the worker endpoint: in split mode these
// are different Services, since a broker-only server mounts no control API.
func TestStdworkerReachesAPIAndBroker(t *testing.T) {
	for mode, want := range map[string][2]string{
		"split": {"http://" + fullname + "-broker:7070", "http://" + fullname + "-control:7070"},
		"all":   {"http://" + fullname + "-all:7070", "http://" + fullname + "-all:7070"},
	} {
		r, vs := renderSet(t, "stdworker-"+mode)
		checkWiring(t, r, vs.existing...)
		d := r.deployment(t, fullname+"-stdworker")
		c := container(t, d)
		server, _ := env(c, "CONVERGE_SERVER")
		api, _ := env(c, "CONVERGE_API_SERVER")
		if server.Value != want[0] || api.Value != want[1] {
			t.Errorf("%s: CONVERGE_SERVER %q, CONVERGE_API_SERVER %q; want %q and %q", mode, server.Value, api.Value, want[0], want[1])
		}
		if _, ok := r.services[strings.TrimSuffix(strings.TrimPrefix(api.Value, "http://"), ":7070")]; !ok {
			t.Errorf("%s: CONVERGE_API_SERVER names no rendered Service (%v)", mode, keys(r.services))
		}
		requireArgs(t, c, "--token-file=/etc/stdworker/token/stdworker")
		if v, _ := volume(d, "token"); v.Secret == nil || v.Secret.SecretName != fullname+"-tokens" {
			t.Errorf("%s: stdworker token volume %+v, want the generated tokens Secret", mode, v)
		}
	}
}

func TestStdworkerPersistence(t *testing.T) {
	r, vs := renderSet(t, "persistence")
	checkWiring(t, r, vs.existing...)
	claim, ok := r.pvcs[fullname+"-stdworker-state"]
	if !ok {
		t.Fatalf("no state claim; have %v", keys(r.pvcs))
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName != "fast" ||
		claim.Spec.Resources.Requests.Storage().String() != "5Gi" || claim.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("claim %+v: want class fast, 5Gi, kept on uninstall", claim)
	}
	d := r.deployment(t, fullname+"-stdworker")
	if v, _ := volume(d, "state"); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != claim.Name || v.EmptyDir != nil {
		t.Errorf("state volume %+v, want the claim", v)
	}
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("strategy %s with a ReadWriteOnce claim, want Recreate", d.Spec.Strategy.Type)
	}

	checkRejected(t, "two replicas on one ReadWriteOnce claim")
	r, vs = renderSet(t, "shared-claim")
	checkWiring(t, r, vs.existing...)
	d = r.deployment(t, fullname+"-stdworker")
	if len(r.pvcs) != 0 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("existing ReadWriteMany claim: claims %v, strategy %s; want none rendered and RollingUpdate", keys(r.pvcs), d.Spec.Strategy.Type)
	}
	if v, _ := volume(d, "state"); v.PersistentVolumeClaim == nil || !slices.Contains([]string{"shared-state"}, v.PersistentVolumeClaim.ClaimName) {
		t.Errorf("state volume %+v, want claim shared-state", v)
	}
}

// The init container registers the std kinds before stdworker asks for
// them, so it must reach the same API with the same identity, and that
// identity must own the std kinds (team std).
func TestStdworkerAppliesKinds(t *testing.T) {
	r := renderDecoded(t, "stdworker applies kinds", base(map[string]any{"stdWorker": map[string]any{"enabled": true}}))
	requireArgs(t, container(t, r.deployment(t, fullname+"-control")), "--team=std=stdworker", "--team=std.graph=stdworker")
	w := r.deployment(t, fullname+"-stdworker")
	inits := w.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "apply-kinds" {
		t.Fatalf("stdworker init containers %+v, want one named apply-kinds", inits)
	}
	ic, mc := inits[0], container(t, w)
	if got := strings.Join(ic.Args[:2], " "); got != "kinds apply" || ic.Image != mc.Image {
		t.Errorf("apply-kinds runs %q in %s, want \"kinds apply\" in the worker's image %s", got, ic.Image, mc.Image)
	}
	requireArgs(t, ic, "--token-file=/etc/stdworker/token/stdworker")
	for _, name := range []string{"CONVERGE_SERVER", "CONVERGE_API_SERVER"} {
		a, _ := env(ic, name)
		b, _ := env(mc, name)
		if a.Value == "" || a.Value != b.Value {
			t.Errorf("%s: apply-kinds has %q, the worker %q", name, a.Value, b.Value)
		}
	}
	if mountPath(ic, "token") != "/etc/stdworker/token" {
		t.Errorf("apply-kinds mounts the token at %q", mountPath(ic, "token"))
	}

	off := renderDecoded(t, "applyKinds off", base(map[string]any{"stdWorker": map[string]any{"enabled": true, "applyKinds": false}}))
	if n := len(off.deployment(t, fullname+"-stdworker").Spec.Template.Spec.InitContainers); n != 0 {
		t.Errorf("applyKinds=false: %d init containers, want none", n)
	}
}

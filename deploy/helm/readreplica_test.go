package helm_test

import (
	"testing"
)

// The read replica's URL reaches the servers that serve the API, from a
// Secret the chart writes or one the user names, with the staleness flags;
// brokers, which serve no reads, get neither.
func TestReadReplica(t *testing.T) {
	r, vs := renderSet(t, "read-replica")
	checkWiring(t, r, vs.existing...)
	secret, ok := r.secrets[fullname+"-read-database"]
	if !ok || string(secret.Data["url"]) != "postgres://standby/c" {
		t.Fatalf("read database Secret %v, want %s-read-database holding the URL", secret, fullname)
	}
	control := r.deployment(t, fullname+"-control")
	if _, ok := control.Spec.Template.Annotations["checksum/read-database"]; !ok {
		t.Errorf("control: no checksum/read-database annotation, so a changed URL would not roll the pods")
	}
	c := container(t, control)
	requireArgs(t, c, "--read-max-lag=5s", "--read-wait=500ms")
	e, _ := env(c, "CONVERGE_READ_DATABASE_URL")
	if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != fullname+"-read-database" ||
		e.ValueFrom.SecretKeyRef.Key != "url" {
		t.Errorf("control: CONVERGE_READ_DATABASE_URL = %+v, want secretKeyRef %s-read-database/url", e, fullname)
	}
	b := container(t, r.deployment(t, fullname+"-broker"))
	if _, ok := env(b, "CONVERGE_READ_DATABASE_URL"); ok {
		t.Errorf("broker gets the read replica's URL; it serves no reads")
	}
	forbidArgPrefix(t, b, "--read-")

	r, vs = renderSet(t, "read-replica-secret")
	checkWiring(t, r, vs.existing...)
	if _, ok := r.secrets[fullname+"-read-database"]; ok {
		t.Errorf("a read database Secret rendered beside an existing one")
	}
	c = container(t, r.deployment(t, fullname+"-all"))
	requireArgs(t, c, "--read-max-lag=2s", "--read-wait=1s")
	e, _ = env(c, "CONVERGE_READ_DATABASE_URL")
	if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != "converge-standby" || e.ValueFrom.SecretKeyRef.Key != "dsn" {
		t.Errorf("all: CONVERGE_READ_DATABASE_URL = %+v, want secretKeyRef converge-standby/dsn", e)
	}

	r, _ = renderSet(t, "defaults")
	if _, ok := env(container(t, r.deployment(t, fullname+"-control")), "CONVERGE_READ_DATABASE_URL"); ok {
		t.Errorf("defaults: a read replica URL without one configured")
	}
}

package helm_test

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// valueSet is one set of chart values the tests render: a testdata file, values built here, or
// a file with top-level keys replaced. The render tests look their values up here by name, and
// TestChartInstallsIntoRealAPIServer installs every entry with the real helm CLI, so no values
// a render test relies on go unchecked by a real API server.
type valueSet struct {
	name string // also the namespace the install test uses, so a DNS label
	file string // under testdata; empty for values built by over alone
	// over returns top-level keys that replace the file's (a fresh map on every call, since
	// tests and helm both get their own copy).
	over func() map[string]any
	// existing names the Secrets and claims these values reference that the chart does not
	// render (the user provides them), for checkWiring.
	existing []string
	// kept lists, as "Kind name", the objects helm uninstall must leave behind (annotated
	// helm.sh/resource-policy: keep); TestChartInstallsIntoRealAPIServer checks exactly these
	// survive.
	kept []string
}

// minimal is the smallest installable values: an inline database URL.
func minimal() map[string]any {
	return map[string]any{"database": map[string]any{"url": "postgres://db/c"}}
}

// base is minimal with overrides merged in at the top level.
func base(over map[string]any) map[string]any {
	v := minimal()
	maps.Copy(v, over)
	return v
}

var valueSets = []valueSet{
	{name: "defaults", file: "defaults.yaml"},
	{name: "existing-secret", file: "existing-secret.yaml", existing: []string{"converge-db"}},
	{name: "tls", file: "tls.yaml", existing: []string{"converge-tls", "converge-worker-tls"}},
	{name: "tls-probes-on-api-port", file: "tls.yaml", existing: []string{"converge-tls", "converge-worker-tls"},
		over: func() map[string]any { return map[string]any{"probes": map[string]any{"useMetricsPort": false}} }},
	{name: "metrics", file: "metrics.yaml"},
	{name: "stdworker", file: "stdworker.yaml"},
	{name: "authorization-off", over: func() map[string]any {
		return base(map[string]any{
			"authorization": map[string]any{"enabled": false, "allowAnonymous": true},
			"stdWorker":     map[string]any{"enabled": true},
		})
	}},
	{name: "authorization-values", existing: []string{"my-tokens", "sw-token", "converge-key"}, over: func() map[string]any {
		return base(map[string]any{
			"mode":      "all",
			"secretKey": map[string]any{"existingSecret": "converge-key", "key": "secret.key"},
			"authorization": map[string]any{
				"adminIDs": []any{"spiffe://td/ns/ops/*"}, "writerIDs": []any{"ci", "spiffe://td/ns/ci/*"}, "readerIDs": []any{},
				"teams": map[string]any{"web": []any{"spiffe://td/ns/web/*", "alice"}, "data": []any{"bob"}},
				"grants": []any{map[string]any{"role": "writer", "namespaces": []any{"team-a-*", "shared"}, "identities": []any{"team:web", "carol"}},
					map[string]any{"role": "read-secrets", "kinds": []any{"data.db", "app.*"}, "identities": []any{"team:data"}}},
				"tokens": map[string]any{"existingSecret": "my-tokens", "key": "file"},
			},
			"stdWorker": map[string]any{"enabled": true, "tokenSecret": map[string]any{"name": "sw-token", "key": "tok"}},
		})
	}},
	{name: "read-replica", over: func() map[string]any {
		return base(map[string]any{"readDatabase": map[string]any{"url": "postgres://standby/c", "maxLag": "5s", "wait": "500ms"}})
	}},
	{name: "read-replica-secret", existing: []string{"converge-db", "converge-standby"}, over: func() map[string]any {
		return map[string]any{"mode": "all",
			"database":     map[string]any{"existingSecret": map[string]any{"name": "converge-db", "key": "dsn"}},
			"readDatabase": map[string]any{"existingSecret": map[string]any{"name": "converge-standby", "key": "dsn"}}}
	}},
	{name: "stdworker-split", over: func() map[string]any {
		return base(map[string]any{"mode": "split", "stdWorker": map[string]any{"enabled": true}})
	}},
	{name: "stdworker-all", over: func() map[string]any {
		return base(map[string]any{"mode": "all", "stdWorker": map[string]any{"enabled": true}})
	}},
	{name: "persistence", kept: []string{"PersistentVolumeClaim " + fullname + "-stdworker-state"}, over: func() map[string]any {
		return base(map[string]any{"stdWorker": map[string]any{"enabled": true,
			"persistence": map[string]any{"enabled": true, "size": "5Gi", "storageClassName": "fast"}}})
	}},
	{name: "shared-claim", existing: []string{"shared-state"}, over: func() map[string]any {
		return base(map[string]any{"stdWorker": map[string]any{"enabled": true, "replicaCount": 2,
			"persistence": map[string]any{"enabled": true, "existingClaim": "shared-state", "accessModes": []any{"ReadWriteMany"}}}})
	}},
}

// rejectedSet is values the chart must refuse to render; want is a substring of the error.
type rejectedSet struct {
	name string
	file string // under testdata; empty for values built by vals
	vals func() map[string]any
	want string
	// schema: values.schema.json rejects these (rather than a template's fail).
	schema bool
}

var rejectedSets = []rejectedSet{
	{name: "invalid/unknown-key.yaml", file: "invalid/unknown-key.yaml", want: "replicas", schema: true},
	{name: "invalid/bad-mode.yaml", file: "invalid/bad-mode.yaml", want: "/mode", schema: true},
	{name: "invalid/bad-port.yaml", file: "invalid/bad-port.yaml", want: "/server/port", schema: true},
	{name: "invalid/bad-spiffe.yaml", file: "invalid/bad-spiffe.yaml", want: "/tls/spiffe/apiIDs", schema: true},
	{name: "invalid/bad-url.yaml", file: "invalid/bad-url.yaml", want: "/database/url", schema: true},
	{name: "identity with a space", want: "/authorization/adminIDs", schema: true, vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"adminIDs": []any{"two words"}}})
	}},
	{name: "grant of admin", want: "/authorization/grants/0/role", schema: true, vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"grants": []any{
			map[string]any{"role": "admin", "namespaces": []any{"a"}, "identities": []any{"x"}}}}})
	}},
	{name: "read-secrets grant naming namespaces", want: "/authorization/grants/0", schema: true, vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"grants": []any{
			map[string]any{"role": "read-secrets", "namespaces": []any{"a"}, "identities": []any{"x"}}}}})
	}},
	{name: "grant of a bad namespace", want: "/authorization/grants/0/namespaces/0", schema: true, vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"grants": []any{
			map[string]any{"role": "reader", "namespaces": []any{"Team_A"}, "identities": []any{"x"}}}}})
	}},

	{name: "no database", vals: func() map[string]any { return map[string]any{} }, want: "set database.url or database.existingSecret.name"},
	{name: "two databases", want: "not both", vals: func() map[string]any {
		return map[string]any{"database": map[string]any{"url": "postgres://db/c", "existingSecret": map[string]any{"name": "s"}}}
	}},
	{name: "two read databases", want: "readDatabase: set either", vals: func() map[string]any {
		return base(map[string]any{"readDatabase": map[string]any{"url": "postgres://standby/c", "existingSecret": map[string]any{"name": "s"}}})
	}},
	{name: "read database is the primary", want: "readDatabase.url: names database.url itself", vals: func() map[string]any {
		return base(map[string]any{"readDatabase": map[string]any{"url": "postgres://db/c"}})
	}},
	{name: "read database bad url", want: "/readDatabase/url", schema: true, vals: func() map[string]any {
		return base(map[string]any{"readDatabase": map[string]any{"url": "mysql://standby/c"}})
	}},
	{name: "read database bad lag", want: "/readDatabase/maxLag", schema: true, vals: func() map[string]any {
		return base(map[string]any{"readDatabase": map[string]any{"maxLag": "2 seconds"}})
	}},
	{name: "tls without secret", want: "tls.secretName", vals: func() map[string]any {
		return base(map[string]any{"tls": map[string]any{"enabled": true}})
	}},
	{name: "servicemonitor without metrics", want: "metrics.serviceMonitor.enabled", vals: func() map[string]any {
		return base(map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
	}},
	{name: "stdworker tls without secret", want: "stdWorker.tlsSecretName", vals: func() map[string]any {
		return base(map[string]any{"tls": map[string]any{"enabled": true, "secretName": "t"}, "stdWorker": map[string]any{"enabled": true}})
	}},
	{name: "authorization off without anonymous", want: "authorization.allowAnonymous=true", vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"enabled": false}})
	}},
	{name: "no roles", want: "no identity holds a role", vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"adminIDs": []any{}, "readerIDs": []any{}, "teams": map[string]any{"std": nil, "std.graph": nil}}})
	}},
	{name: "anonymous and on", want: "authorization.allowAnonymous: only with", vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"allowAnonymous": true}})
	}},
	{name: "identity named key", want: "is also tokens.key", vals: func() map[string]any {
		return base(map[string]any{"authorization": map[string]any{"tokens": map[string]any{"key": "admin", "generate": []any{"admin"}, "existingSecret": ""}}})
	}},
	{name: "two replicas on one ReadWriteOnce claim", want: "accessModes needs ReadWriteMany", vals: func() map[string]any {
		return base(map[string]any{"stdWorker": map[string]any{"enabled": true, "replicaCount": 2, "persistence": map[string]any{"enabled": true}}})
	}},
}

func lookupValueSet(t *testing.T, name string) valueSet {
	t.Helper()
	for _, vs := range valueSets {
		if vs.name == name {
			return vs
		}
	}
	t.Fatalf("no value set %q in valueSets", name)
	return valueSet{}
}

// values returns the set's values as the render tests pass them to the chart.
func (vs valueSet) values(t *testing.T) map[string]any {
	t.Helper()
	v := map[string]any{}
	if vs.file != "" {
		v = readValues(t, vs.file)
	}
	if vs.over != nil {
		maps.Copy(v, vs.over())
	}
	return v
}

// renderSet renders the named value set and decodes every document strictly.
func renderSet(t *testing.T, name string) (*rendered, valueSet) {
	t.Helper()
	vs := lookupValueSet(t, name)
	return renderDecoded(t, vs.name, vs.values(t)), vs
}

func lookupRejected(t *testing.T, name string) rejectedSet {
	t.Helper()
	for _, rs := range rejectedSets {
		if rs.name == name {
			return rs
		}
	}
	t.Fatalf("no rejected set %q in rejectedSets", name)
	return rejectedSet{}
}

func (rs rejectedSet) values(t *testing.T) map[string]any {
	t.Helper()
	if rs.file != "" {
		return readValues(t, rs.file)
	}
	return rs.vals()
}

// checkRejected renders the named rejected set and checks the error names what is wrong.
func checkRejected(t *testing.T, name string) {
	t.Helper()
	rs := lookupRejected(t, name)
	_, err := renderValues(t, rs.values(t))
	switch {
	case err == nil:
		t.Errorf("%s rendered; the chart should reject it with an error naming %q", rs.name, rs.want)
	case !strings.Contains(err.Error(), rs.want) || rs.schema && !strings.Contains(err.Error(), "schema"):
		t.Errorf("%s: error %q, want one naming %q%s", rs.name, err, rs.want, map[bool]string{true: " as a schema violation"}[rs.schema])
	}
}

// testdataFiles lists the testdata values files (the top level and invalid/), so a test can
// check each one is in valueSets or rejectedSets.
func testdataFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"*.yaml", filepath.Join("invalid", "*.yaml")} {
		m, err := filepath.Glob(filepath.Join("testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel("testdata", f)
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// TestEveryTestdataFileIsAValueSet keeps the shared lists complete: a values file added under
// testdata but not listed would be rendered by no test and installed by none.
func TestEveryTestdataFileIsAValueSet(t *testing.T) {
	listed := map[string]bool{}
	for _, vs := range valueSets {
		listed[vs.file] = true
	}
	for _, rs := range rejectedSets {
		listed[rs.file] = true
	}
	files := testdataFiles(t)
	if len(files) == 0 {
		t.Fatal("no values files under testdata")
	}
	for _, f := range files {
		if !listed[f] {
			t.Errorf("testdata/%s is in neither valueSets nor rejectedSets (valuesets_test.go)", f)
		}
	}
	names := map[string]bool{}
	for _, vs := range valueSets {
		if names[vs.name] {
			t.Errorf("value set name %q is used twice", vs.name)
		}
		names[vs.name] = true
	}
}

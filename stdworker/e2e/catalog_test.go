//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// catalogEnv is a converge dev that has the whole catalog applied, and a
// stdworker serving every kind of it from the kinds' stdworker.yaml.
type catalogEnv struct {
	d      *dev
	kinds  []*catalogKind
	tmp    string          // the scripts' TMPDIR: their simulated clouds live here
	served map[string]bool // the kind versions stdworker was configured with, "kind@version"
}

// startCatalog applies the std kinds, publishes the catalog with conctl
// catalog publish, starts stdworker with the kinds' merged stdworker.yaml
// entries, and waits for every graph to serve its kind.
func startCatalog(t *testing.T) *catalogEnv {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the catalog's stdio programs need jq, which is not on PATH")
	}
	env := &catalogEnv{kinds: readCatalog(t), tmp: t.TempDir()}
	env.d = startDev(t)
	env.d.kindsApply(t)
	var graphs []string
	for _, k := range env.kinds {
		graphs = append(graphs, k.graphs...)
	}
	// Publish applies manifests, then graphs, then configs and bindings;
	// the graphs wait for stdworker, started next, to serve their kinds.
	if res := env.d.conctl(t, "", "catalog", "publish", repoPath(t, "catalog")); res.code != 0 {
		t.Fatalf("%s", res)
	}

	config, served := servedBy(t, env.kinds, env.tmp)
	env.served = served
	env.d.stdworker(t, "--config", writeFile(t, t.TempDir(), "stdworker.yaml", string(config), 0o644))

	for _, g := range graphs {
		name, _ := readDocs(t, g)[0]["name"].(string)
		env.d.waitPhase(t, "std.graph", name, client.PhaseReady, 30*time.Second)
	}
	return env
}

// applyFiles runs conctl apply -f over files (none: nothing to do).
func (env *catalogEnv) applyFiles(t *testing.T, files []string) {
	t.Helper()
	if len(files) == 0 {
		return
	}
	args := []string{"apply"}
	for _, f := range files {
		args = append(args, "-f", f)
	}
	if res := env.d.conctl(t, "", args...); res.code != 0 {
		t.Fatalf("%s", res)
	}
}

// TestCatalogExamplesReady applies every example of every kind of the
// catalog and waits for each to be Ready; a graph-defined kind's instance
// must also have its whole status projected. Every example's kind must be
// served by the catalog's stdworker.yaml entries, directly or, for a kind
// a graph defines, through std.graph.
func TestCatalogExamplesReady(t *testing.T) {
	env := startCatalog(t)
	projected := map[string][]string{} // graph-defined kind -> its status fields
	for _, k := range env.kinds {
		for _, g := range k.graphs {
			spec, _ := readDocs(t, g)[0]["spec"].(map[string]any)
			status, _ := spec["status"].(map[string]any)
			projected[k.name] = sortedKeys(status)
		}
	}

	type want struct{ kind, name string }
	var examples []string
	var all []want
	for _, k := range env.kinds {
		for _, f := range k.examples {
			for i, doc := range readDocs(t, f) {
				kind, _ := doc["kind"].(string)
				name, _ := doc["name"].(string)
				if doc["type"] != "resource" || kind != k.name || name == "" {
					t.Fatalf("%s: document %d: want a resource of %s with a name", f, i+1, k.name)
				}
				key := fmt.Sprintf("%s@%v", kind, doc["kind_version"])
				if _, graph := projected[kind]; !graph && !env.served[key] {
					t.Errorf("%s: %s is served by no stdworker.yaml in the catalog", f, key)
				}
				all = append(all, want{kind, name})
			}
			examples = append(examples, f)
		}
	}
	if len(all) == 0 {
		t.Fatal("the catalog has no examples")
	}
	env.applyFiles(t, examples)
	for _, w := range all {
		fields := projected[w.kind]
		what := "Ready (or Failed)"
		if len(fields) > 0 {
			what = "Ready with status " + strings.Join(fields, ", ") + " (or Failed)"
		}
		r := env.d.waitFor(t, w.kind, w.name, what, 45*time.Second, func(r *convergev1.Resource) bool {
			if r.GetPhase() == client.PhaseFailed {
				return true
			}
			if r.GetPhase() != client.PhaseReady {
				return false
			}
			for _, f := range fields {
				if r.GetStatus().GetFields()[f] == nil {
					return false
				}
			}
			return true
		})
		if r.GetPhase() == client.PhaseFailed {
			t.Errorf("%s/%s failed: %s", w.kind, w.name, r.GetFailure().GetMessage())
		}
	}

	t.Run("webapp flows", func(t *testing.T) { checkWebappFlows(t, env.d) })
	t.Run("landing zone flows", func(t *testing.T) { checkLandingZoneFlows(t, env.d) })
	t.Run("time window flows", func(t *testing.T) { checkWindowFlows(t, env.d) })
	t.Run("landing zone deleted", func(t *testing.T) { checkLandingZoneDeleted(t, env) })
}

// checkWebappFlows: in apps.webapp/shop the service got the database's URL
// and the DNS record points at the service's address.
func checkWebappFlows(t *testing.T, d *dev) {
	db := statusOf(t, d.get(t, "apps.database", "shop-db"))
	svc := d.get(t, "apps.service", "shop")
	dns := d.get(t, "apps.dnsrecord", "shop-dns")
	if got := specString(svc, "database_url"); got == "" || got != db["url"] {
		t.Errorf("apps.service/shop spec.database_url = %q, want the database's status.url %v", got, db["url"])
	}
	if got := specString(dns, "target"); got == "" || got != statusOf(t, svc)["address"] {
		t.Errorf("apps.dnsrecord/shop-dns spec.target = %q, want the service's status.address %v", got, statusOf(t, svc)["address"])
	}
	root := statusOf(t, d.get(t, "apps.webapp", "shop"))
	if root["url"] != "https://shop.apps.acme.example" || root["replicas"] != float64(3) {
		t.Errorf("apps.webapp/shop status %v, want url https://shop.apps.acme.example and replicas 3", root)
	}
}

// checkWindowFlows: in tf-time.window/freeze, two kinds generated from the
// Terraform time provider, the end (time_offset) got the start's
// (time_static's) computed rfc3339 as its base, and the window's status
// has both, fourteen days apart.
func checkWindowFlows(t *testing.T, d *dev) {
	start := statusOf(t, d.get(t, "tf.time.static", "freeze-start"))
	end := d.get(t, "tf.time.offset", "freeze-end")
	if got := specString(end, "base_rfc3339"); got == "" || got != start["rfc3339"] {
		t.Errorf("tf.time.offset/freeze-end spec.base_rfc3339 = %q, want the start's status.rfc3339 %v", got, start["rfc3339"])
	}
	root := statusOf(t, d.get(t, "tf-time.window", "freeze"))
	if root["start"] != "2026-12-14T00:00:00Z" || root["end"] != "2026-12-28T00:00:00Z" {
		t.Errorf("tf-time.window/freeze status %v, want start 2026-12-14T00:00:00Z and end 2026-12-28T00:00:00Z", root)
	}
}

// checkLandingZoneFlows: in platform.landingzone/payments each VPC got its
// account's id and each route its VPC's id and block.
func checkLandingZoneFlows(t *testing.T, d *dev) {
	for _, env := range []string{"prod", "dev"} {
		acct := statusOf(t, d.get(t, "platform.account", "payments-"+env))
		vpc := d.get(t, "platform.vpc", "payments-"+env+"-vpc")
		route := d.get(t, "platform.route", "payments-"+env+"-egress")
		if got := specString(vpc, "account_id"); got == "" || got != acct["account_id"] {
			t.Errorf("platform.vpc/payments-%s spec.account_id = %q, want the account's %v", env, got, acct["account_id"])
		}
		vs := statusOf(t, vpc)
		if specString(route, "vpc_id") != vs["vpc_id"] || specString(route, "vpc_cidr") != vs["cidr"] {
			t.Errorf("platform.route/payments-%s-egress spec %v, want vpc_id %v and vpc_cidr %v from the VPC", env, route.GetSpec().AsMap(), vs["vpc_id"], vs["cidr"])
		}
	}
	zone := statusOf(t, d.get(t, "platform.landingzone", "payments"))
	if zone["prod_account_id"] == zone["dev_account_id"] || zone["prod_vpc_id"] == nil {
		t.Errorf("platform.landingzone/payments status %v, want two accounts and their VPCs", zone)
	}
}

// checkLandingZoneDeleted: deleting platform.landingzone/payments deletes
// its six children, and their teardowns remove what they made in the
// simulated cloud.
func checkLandingZoneDeleted(t *testing.T, env *catalogEnv) {
	cloud := filepath.Join(env.tmp, "converge-catalog", "platform")
	type child struct{ kind, name, file string }
	var children []child
	for _, e := range []string{"prod", "dev"} {
		acct := statusOf(t, env.d.get(t, "platform.account", "payments-"+e))
		vpc := statusOf(t, env.d.get(t, "platform.vpc", "payments-"+e+"-vpc"))
		route := statusOf(t, env.d.get(t, "platform.route", "payments-"+e+"-egress"))
		children = append(children,
			child{"platform.account", "payments-" + e, filepath.Join(cloud, "accounts", "payments-"+e+".json")},
			child{"platform.vpc", "payments-" + e + "-vpc", filepath.Join(cloud, "vpcs", fmt.Sprint(acct["account_id"]), fmt.Sprint(vpc["vpc_id"])+".json")},
			child{"platform.route", "payments-" + e + "-egress", filepath.Join(cloud, "routes", fmt.Sprint(vpc["vpc_id"]), fmt.Sprint(route["route_table_id"])+".json")})
	}
	for _, c := range children {
		if _, err := os.Stat(c.file); err != nil {
			t.Fatalf("%s/%s is Ready but the simulated cloud has no %s: %v", c.kind, c.name, c.file, err)
		}
	}
	if res := env.d.conctl(t, "", "delete", "resource", "platform.landingzone/payments", "--wait"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	for _, c := range children {
		_, err := env.d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: c.kind, Name: c.name})
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("%s/%s after its landing zone was deleted: %v, want NotFound", c.kind, c.name, err)
		}
		if _, err := os.Stat(c.file); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s/%s is deleted but %s is still in the simulated cloud (%v): its teardown did not run", c.kind, c.name, c.file, err)
		}
	}
}

// TestCatalogObjectstorePromise is the promise of a kind with two
// implementations: the storage.objectstore example applied once with the
// aws provider config and once with the gcp one becomes Ready both times,
// both statuses satisfy the kind's status_schema as the server has it, and
// they differ: two clouds really served them.
func TestCatalogObjectstorePromise(t *testing.T) {
	env := startCatalog(t)
	const kind = "storage.objectstore"
	example := filepath.Join(repoPath(t, "catalog/storage/"+kind), "examples", "assets.yaml")
	docs := readDocs(t, example)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want one", example, len(docs))
	}
	var yamls []string
	for _, cloud := range []string{"aws", "gcp"} {
		doc := docs[0]
		doc["name"] = "promise-" + cloud
		doc["provider_config"] = cloud
		raw, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		yamls = append(yamls, string(raw))
	}
	env.d.apply(t, strings.Join(yamls, "---\n"))

	k, err := env.d.api.GetKind(t.Context(), &convergev1.GetKindRequest{Kind: kind, KindVersion: 1})
	if err != nil {
		t.Fatalf("get kind %s v1: %v", kind, err)
	}
	schema := compileStatusSchema(t, k.GetManifest())
	statuses := map[string]map[string]any{}
	for _, cloud := range []string{"aws", "gcp"} {
		r := env.d.waitFor(t, kind, "promise-"+cloud, "Ready or Failed", 30*time.Second, func(r *convergev1.Resource) bool {
			return r.GetPhase() == client.PhaseReady || r.GetPhase() == client.PhaseFailed
		})
		if r.GetPhase() == client.PhaseFailed {
			t.Errorf("%s/promise-%s failed: %s", kind, cloud, r.GetFailure().GetMessage())
			continue
		}
		st := statusOf(t, r)
		if err := validateJSON(schema, st); err != nil {
			t.Errorf("%s/promise-%s status %v breaks the kind's status_schema: %v", kind, cloud, st, err)
		}
		if st["cloud"] != cloud {
			t.Errorf("%s/promise-%s status.cloud = %v, want %s: the provider config did not reach the program", kind, cloud, st["cloud"], cloud)
		}
		bucket, _ := st["bucket"].(string)
		if _, err := os.Stat(filepath.Join(env.tmp, "converge-catalog", "storage", cloud, bucket+".json")); err != nil {
			t.Errorf("%s/promise-%s: the simulated %s has no bucket %q: %v", kind, cloud, cloud, bucket, err)
		}
		statuses[cloud] = st
	}
	if len(statuses) < 2 {
		return // a failed implementation is reported above; comparing would add noise
	}
	aws, gcp := statuses["aws"], statuses["gcp"]
	if !reflect.DeepEqual(sortedKeys(aws), sortedKeys(gcp)) {
		t.Errorf("the two implementations report different fields: aws %v, gcp %v", sortedKeys(aws), sortedKeys(gcp))
	}
	for _, f := range []string{"bucket", "url", "region"} {
		if aws[f] == gcp[f] {
			t.Errorf("status.%s is %v on both clouds: want two implementations", f, aws[f])
		}
	}
	for _, f := range []string{"versioning", "public", "expire_days"} {
		if aws[f] != gcp[f] {
			t.Errorf("status.%s: aws %v, gcp %v: the same spec must keep the same promise", f, aws[f], gcp[f])
		}
	}
}

// compileStatusSchema compiles a manifest's status_schema as the server
// does (JSON Schema 2020-12, formats asserted). The server's own package
// (server/internal/schema) is internal to server/; it is built on the same
// library.
func compileStatusSchema(t *testing.T, m *convergev1.KindManifest) *jsonschema.Schema {
	t.Helper()
	raw, err := protojson.Marshal(m.GetStatusSchema())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s status_schema: %v", m.GetKind(), err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("status_schema.json", doc); err != nil {
		t.Fatalf("%s status_schema: %v", m.GetKind(), err)
	}
	s, err := c.Compile("status_schema.json")
	if err != nil {
		t.Fatalf("%s status_schema: %v", m.GetKind(), err)
	}
	return s
}

func specString(r *convergev1.Resource, field string) string {
	return r.GetSpec().GetFields()[field].GetStringValue()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateJSON checks v, encoded as JSON, against s: the numbers are JSON
// numbers, as the server sees them.
func validateJSON(s *jsonschema.Schema, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

package helm_test

// TestChartInstallsIntoRealAPIServer installs the chart with the real helm CLI into a real
// kube-apiserver backed by a real etcd, both started here on loopback in a temporary directory,
// for every entry of valueSets (valuesets_test.go). The render tests decode what the chart
// renders into the Go types; only the API server applies its own validation, defaulting and
// admission (and runs the chart's lookup of the tokens Secret), so this is where a field the
// server rejects, or tokens regenerated on upgrade, would show. For each value set it runs
// helm lint, helm template, helm install into a namespace of its own, checks every object of
// the release manifest exists, runs helm upgrade with a changed image tag (the tokens Secret
// must keep its tokens), then helm uninstall: every object must be gone except those annotated
// helm.sh/resource-policy: keep (stdworker's state claim), which must survive. It also runs
// helm template on each entry of rejectedSets, which the CLI must refuse as the library does.
// Nothing runs pods (no kubelet, scheduler or controller-manager), so there is no --wait.
//
// The programs come from scripts/find-k8s.sh, which builds them once into the tools cache
// (10 to 25 minutes on 2 cores the first time, milliseconds after) and prints the environment this test
// reads: CONVERGE_TEST_ETCD, CONVERGE_TEST_KUBE_APISERVER, CONVERGE_TEST_HELM and
// CONVERGE_TEST_SERVICEMONITOR_CRD (the prometheus-operator CRD, so the chart's ServiceMonitor
// is validated against its real schema). scripts/test.sh runs it for the full run; by hand:
//
//	eval "export $(scripts/find-k8s.sh | tr '\n' ' ')"
//	go test -run TestChartInstallsIntoRealAPIServer ./deploy/helm
//
// Without those variables, and under -short, the test skips and says why.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/releaseutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// kubeTools are the programs and files scripts/find-k8s.sh provides.
type kubeTools struct {
	etcd, apiserver, helm, serviceMonitorCRD string
}

func findKubeTools(t *testing.T) kubeTools {
	t.Helper()
	vars := []string{"CONVERGE_TEST_ETCD", "CONVERGE_TEST_KUBE_APISERVER", "CONVERGE_TEST_HELM", "CONVERGE_TEST_SERVICEMONITOR_CRD"}
	var missing []string
	got := map[string]string{}
	for _, v := range vars {
		got[v] = os.Getenv(v)
		if got[v] == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		t.Skipf("%s unset: no etcd, kube-apiserver and helm CLI to install the chart into a real API server; "+
			`run eval "export $(scripts/find-k8s.sh | tr '\n' ' ')" first (scripts/test.sh does, without -short)`,
			strings.Join(missing, ", "))
	}
	for _, v := range vars {
		if _, err := os.Stat(got[v]); err != nil {
			t.Fatalf("%s=%s: %v (rerun scripts/find-k8s.sh)", v, got[v], err)
		}
	}
	return kubeTools{got[vars[0]], got[vars[1]], got[vars[2]], got[vars[3]]}
}

func TestChartInstallsIntoRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the install into a real kube-apiserver and etcd (seconds, and needs scripts/find-k8s.sh)")
	}
	tools := findKubeTools(t)
	c := startCluster(t, tools)
	c.createFromFile(t, tools.serviceMonitorCRD)
	c.waitCRDEstablished(t, "servicemonitors.monitoring.coreos.com")

	t.Run("install", func(t *testing.T) {
		for _, vs := range valueSets {
			t.Run(vs.name, func(t *testing.T) {
				t.Parallel()
				c.installCycle(t, vs)
			})
		}
	})

	t.Run("rejected", func(t *testing.T) {
		for _, rs := range rejectedSets {
			t.Run(rs.name, func(t *testing.T) {
				t.Parallel()
				file := writeValues(t, rs.values(t))
				out, err := c.helmErr(t, "template", releaseName, chartDir, "--namespace", namespace, "--values", file)
				if err == nil {
					t.Fatalf("helm template accepted %s; want an error naming %q", rs.name, rs.want)
				}
				if !strings.Contains(out, rs.want) {
					t.Errorf("helm template %s: %v, output %q; want it to name %q", rs.name, err, out, rs.want)
				}
			})
		}
	})
}

// installCycle installs, upgrades and uninstalls vs in its own namespace.
func (c *cluster) installCycle(t *testing.T, vs valueSet) {
	ns := vs.name
	file := filepath.Join("testdata", vs.file)
	if vs.over != nil || vs.file == "" {
		file = writeValues(t, vs.values(t))
	}

	c.helm(t, "lint", "--strict", chartDir, "--namespace", ns, "--values", file)

	// The CLI renders what the library renders: the same objects by kind and name.
	templated := objectIDs(t, parseManifest(t, c.helm(t, "template", releaseName, chartDir, "--namespace", ns, "--values", file)))
	library := objectIDs(t, parseManifest(t, renderedManifest(t, vs.values(t))))
	if !slices.Equal(templated, library) {
		t.Errorf("helm template renders %v, the Go render %v", templated, library)
	}

	c.helm(t, "install", releaseName, chartDir, "--namespace", ns, "--create-namespace", "--values", file)
	objs := parseManifest(t, c.helm(t, "get", "manifest", releaseName, "--namespace", ns))
	if got := objectIDs(t, objs); !slices.Equal(got, templated) {
		t.Errorf("installed release has %v, helm template rendered %v", got, templated)
	}
	for _, o := range objs {
		if _, err := c.get(t, ns, o); err != nil {
			t.Errorf("%s after install: %v", id(o), err)
		}
	}

	tokensName := fullname + "-tokens"
	var tokensBefore map[string]any
	if slices.Contains(templated, "Secret "+tokensName) {
		tokensBefore = c.secretData(t, ns, tokensName)
		if len(tokensBefore) == 0 {
			t.Errorf("Secret %s has no data after install", tokensName)
		}
	}

	// The upgrade changes the server image tag: the Deployments must follow, while the tokens
	// the chart generated at install stay what clients were given.
	const tag = "0.1.1-upgrade"
	c.helm(t, "upgrade", releaseName, chartDir, "--namespace", ns, "--values", file, "--set", "image.tag="+tag)
	upgraded := 0
	for _, o := range parseManifest(t, c.helm(t, "get", "manifest", releaseName, "--namespace", ns)) {
		if o.GetKind() != "Deployment" || o.GetLabels()["app.kubernetes.io/component"] == "stdworker" {
			continue
		}
		live, err := c.get(t, ns, o)
		if err != nil {
			t.Errorf("%s after upgrade: %v", id(o), err)
			continue
		}
		images, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
		for _, ci := range images {
			if img, _ := ci.(map[string]any)["image"].(string); img != "ghcr.io/convergehq/converge:"+tag {
				t.Errorf("%s after upgrade runs image %q, want tag %s", id(o), img, tag)
			}
		}
		upgraded++
	}
	if upgraded == 0 {
		t.Errorf("no server Deployment in the upgraded release")
	}
	if tokensBefore != nil {
		if changed := changedKeys(tokensBefore, c.secretData(t, ns, tokensName)); len(changed) > 0 {
			t.Errorf("helm upgrade changed keys %v of Secret %s: the chart's lookup should keep the tokens it generated at install",
				changed, tokensName)
		}
	}

	c.helm(t, "uninstall", releaseName, "--namespace", ns)
	var gone, keep []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetAnnotations()["helm.sh/resource-policy"] == "keep" {
			keep = append(keep, o)
		} else {
			gone = append(gone, o)
		}
	}
	// Deletion is immediate except for objects with finalizers (a claim's pvc-protection), whose
	// controllers this cluster does not run: an object marked for deletion counts as deleted.
	waitUntil(t, 30*time.Second, "objects deleted by helm uninstall", func() error {
		var left []string
		for _, o := range gone {
			live, err := c.get(t, ns, o)
			switch {
			case err == nil && live.GetDeletionTimestamp() == nil:
				left = append(left, id(o))
			case err != nil && !apierrors.IsNotFound(err):
				return fmt.Errorf("%s: %w", id(o), err)
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("still present: %v", left)
		}
		return nil
	})
	var survived []string
	for _, o := range keep {
		live, err := c.get(t, ns, o)
		switch {
		case err != nil:
			t.Errorf("%s is annotated helm.sh/resource-policy: keep but is gone after uninstall: %v", id(o), err)
		case live.GetDeletionTimestamp() != nil:
			t.Errorf("%s is annotated helm.sh/resource-policy: keep but helm uninstall deleted it (deletionTimestamp %s)", id(o), live.GetDeletionTimestamp())
		default:
			survived = append(survived, id(o))
		}
	}
	slices.Sort(survived)
	// The keep check is only as good as the objects carrying the annotation.
	if want := slices.Sorted(slices.Values(vs.kept)); !t.Failed() && !slices.Equal(survived, want) {
		t.Errorf("objects left by helm uninstall: %v, want %v (valueSet.kept)", survived, want)
	}
	if _, err := c.helmErr(t, "status", releaseName, "--namespace", ns); err == nil {
		t.Errorf("helm status still finds release %s in %s after uninstall", releaseName, ns)
	}
}

// renderedManifest renders vals with the Go library, as the render tests do, into one stream.
func renderedManifest(t *testing.T, vals map[string]any) string {
	t.Helper()
	out, err := renderValues(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var b strings.Builder
	for name, s := range out {
		if !strings.HasSuffix(name, "NOTES.txt") {
			b.WriteString("\n---\n" + s)
		}
	}
	return b.String()
}

func parseManifest(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range releaseutil.SplitManifests(manifest) {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("manifest: %v\n%s", err, doc)
		}
		if s := strings.TrimSpace(string(j)); s == "null" || s == "{}" {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := o.UnmarshalJSON(j); err != nil {
			t.Fatalf("manifest: %v\n%s", err, doc)
		}
		objs = append(objs, o)
	}
	return objs
}

func id(o *unstructured.Unstructured) string { return o.GetKind() + " " + o.GetName() }

// objectIDs lists the objects as sorted "Kind name" strings.
func objectIDs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	ids := make([]string, 0, len(objs))
	for _, o := range objs {
		ids = append(ids, id(o))
	}
	slices.Sort(ids)
	return ids
}

// changedKeys lists the keys whose values differ between two Secrets' data, sorted.
func changedKeys(before, after map[string]any) []string {
	var changed []string
	for k, v := range before {
		if after[k] != v {
			changed = append(changed, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed
}

// writeValues writes vals to a values file for the helm CLI.
func writeValues(t *testing.T, vals map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// cluster is an etcd and a kube-apiserver on loopback, and a helm CLI configured for them.
type cluster struct {
	tools      kubeTools
	dir        string
	kubeconfig string
	config     *rest.Config
	dynamic    dynamic.Interface
	mapper     meta.RESTMapper
	helmEnv    []string
}

func startCluster(t *testing.T, tools kubeTools) *cluster {
	t.Helper()
	// The API server's cert dir and etcd's data dir live here; /tmp keeps socket-free paths short.
	dir, err := os.MkdirTemp("", "converge-kubeapi-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s for inspection (etcd.log, kube-apiserver.log)", dir)
			return
		}
		os.RemoveAll(dir)
	})
	c := &cluster{tools: tools, dir: dir}
	start := time.Now()

	ports := freePorts(t, 3)
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd := startProcess(t, dir, "etcd", tools.etcd,
		"--name=test", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--log-level=warn")
	waitUntil(t, 30*time.Second, "etcd healthy at "+etcdURL, func() error {
		if err := etcd.exited(); err != nil {
			t.Fatalf("etcd exited: %v\n%s", err, etcd.tail())
		}
		resp, err := http.Get(etcdURL + "/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"health":"true"`)) {
			return fmt.Errorf("%s: %s", resp.Status, b)
		}
		return nil
	})

	token := randomHex(t, 16)
	write(t, filepath.Join(dir, "tokens.csv"), token+`,converge-test,converge-test,"system:masters"`+"\n")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sa.key"), string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	write(t, filepath.Join(dir, "sa.pub"), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))

	apiURL := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	api := startProcess(t, dir, "kube-apiserver", tools.apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		// No kubelets or controllers: nothing would keep the kubernetes Service's endpoints.
		"--endpoint-reconciler-type=none")
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	// The first start creates its bootstrap objects; on a loaded 2-core CI machine that is slow.
	waitUntil(t, 2*time.Minute, "kube-apiserver ready at "+apiURL, func() error {
		if err := api.exited(); err != nil {
			t.Fatalf("kube-apiserver exited: %v\n%s", err, api.tail())
		}
		req, _ := http.NewRequest(http.MethodGet, apiURL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := insecure.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("%s: %s", resp.Status, b)
		}
		return nil
	})

	t.Logf("etcd and kube-apiserver ready in %s (%s)", time.Since(start).Round(time.Millisecond), dir)

	c.kubeconfig = filepath.Join(dir, "kubeconfig")
	write(t, c.kubeconfig, fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: test
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, apiURL, token))
	c.config = &rest.Config{Host: apiURL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	if c.dynamic, err = dynamic.NewForConfig(c.config); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.config)
	if err != nil {
		t.Fatal(err)
	}
	// Discovery is read on first use (after the test has established its CRD) and again
	// when a kind is not found.
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	// helm gets a home of its own, so neither the user's kubeconfig, contexts, repositories
	// nor plugins reach it, and its discovery cache stays in the temporary directory.
	home := filepath.Join(dir, "home")
	c.helmEnv = append(os.Environ(),
		"HOME="+home, "KUBECONFIG="+c.kubeconfig, "KUBECACHEDIR="+filepath.Join(home, "kubecache"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"), "HELM_KUBECONTEXT=", "HELM_NAMESPACE=", "HELM_DRIVER=secret")
	return c
}

// helmErr runs the helm CLI and returns its combined output.
func (c *cluster) helmErr(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.tools.helm, append(args, "--kubeconfig", c.kubeconfig)...)
	cmd.Env = c.helmEnv
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helm runs the helm CLI, failing the test if it fails, and returns its output.
func (c *cluster) helm(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (c *cluster) resource(t *testing.T, o *unstructured.Unstructured) (dynamic.NamespaceableResourceInterface, bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: no API resource for %s: %v", id(o), gvk, err)
	}
	return c.dynamic.Resource(m.Resource), m.Scope.Name() == meta.RESTScopeNameNamespace
}

// get fetches the live object o names; a namespaced object without a namespace is in ns.
func (c *cluster) get(t *testing.T, ns string, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	r, namespaced := c.resource(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !namespaced {
		return r.Get(ctx, o.GetName(), metav1.GetOptions{})
	}
	if o.GetNamespace() != "" {
		ns = o.GetNamespace()
	}
	return r.Namespace(ns).Get(ctx, o.GetName(), metav1.GetOptions{})
}

func (c *cluster) secretData(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	s := &unstructured.Unstructured{}
	s.SetAPIVersion("v1")
	s.SetKind("Secret")
	s.SetName(name)
	live, err := c.get(t, ns, s)
	if err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	data, _, _ := unstructured.NestedMap(live.Object, "data")
	return data
}

// createFromFile creates the objects of a YAML file (the ServiceMonitor CRD).
func (c *cluster) createFromFile(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range parseManifest(t, string(b)) {
		gvk := o.GroupVersionKind()
		if gvk.Kind != "CustomResourceDefinition" {
			t.Fatalf("%s: %s, want only CustomResourceDefinitions", file, id(o))
		}
		// A CRD's resource is fixed; the mapper is read after it is established.
		r := c.dynamic.Resource(schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "customresourcedefinitions"})
		if _, err := r.Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s from %s: %v", id(o), file, err)
		}
	}
}

func (c *cluster) waitCRDEstablished(t *testing.T, name string) {
	t.Helper()
	r := c.dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	waitUntil(t, 30*time.Second, "CRD "+name+" established", func() error {
		crd, err := r.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m, _ := cond.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", conds)
	})
}

// process is a server the test started; it is stopped when the test ends.
type process struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProcess(t *testing.T, dir, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = childProcAttr()
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log (last lines):\n%s", name, p.tail())
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exited returns non-nil once the process has exited.
func (p *process) exited() error {
	select {
	case <-p.done:
		if p.err == nil {
			return errors.New("exit status 0")
		}
		return p.err
	default:
		return nil
	}
}

func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// waitUntil polls check until it returns nil, failing the test with its last error at the deadline.
func waitUntil(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %v", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts returns n distinct loopback ports nothing listens on now (all are held open until
// all are chosen). Another process could take one before a server binds it; that server then
// fails to start and its log, which the test prints, says so.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

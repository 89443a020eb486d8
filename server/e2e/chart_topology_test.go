//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/convergehq/converge/deploy/helm/chartrender"
	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestChartTopologies runs what the Helm chart would run, in each of its
// topologies: every container of every Deployment the chart renders is
// started here as a process, from the chart's own args and env, with its
// Secret and ConfigMap volumes written to files and its Services mapped to
// loopback ports. The chart's defaults are kept (authorization on, tokens
// generated), stdworker is on, and a std.shell resource must reach Ready:
// so stdworker found the control API and the broker with the identity the
// chart gave it, and the std kinds were registered by its init container;
// and a kind defined by a std.graph is registered and served, which needs
// the team the chart gives stdworker for graph-defined kinds.
func TestChartTopologies(t *testing.T) {
	begin(t)
	for _, mode := range []string{"all", "split"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := pgtest.New(t)
			k := newPodSim(t, renderChart(t, map[string]any{
				"mode":      mode,
				"database":  map[string]any{"url": db.URL},
				"stdWorker": map[string]any{"enabled": true},
			}))
			servers := k.deploymentsExcept("stdworker")
			if want := map[string]int{"all": 1, "split": 2}[mode]; len(servers) != want {
				t.Fatalf("mode %s renders server Deployments %v, want %d", mode, servers, want)
			}
			for _, name := range servers {
				k.start(name)
			}
			for _, name := range servers {
				k.waitReady(name)
			}
			k.start(k.fullname + "-stdworker")

			admin := k.client(k.secretValue(k.fullname+"-tokens", "admin"))
			name := "chart-" + mode
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			if _, err := admin.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
				Kind: "std.shell", KindVersion: 1, Name: name,
				Spec: mustStruct(t, map[string]any{"script": "echo served by the chart stdworker"}),
			}); err != nil {
				t.Fatalf("apply std.shell/%s with the admin token: %v", name, err)
			}
			r := waitPhase(t, admin, "std.shell", name, "Ready")
			if out := r.GetStatus().AsMap()["stdout_tail"]; !strings.Contains(fmt.Sprint(out), "served by the chart stdworker") {
				t.Errorf("std.shell/%s is Ready with stdout_tail %q", name, out)
			}

			// A std.graph defines a kind that stdworker registers under the
			// graph's owner and serves; its instance composes a std.shell.
			if _, err := admin.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
				Kind: "std.graph", KindVersion: 1, Name: "hello",
				Spec: mustStruct(t, map[string]any{
					"kind": "chart.hello", "version": 1,
					"spec_fields": map[string]any{"message": "string | required"},
					"resources": []any{map[string]any{
						"id": "say", "kind": "std.shell", "version": 1,
						"template": map[string]any{"spec": map[string]any{"script": "echo ${schema.spec.message}"}},
					}},
					"status": map[string]any{"said": "${say.status.stdout_tail}"},
				}),
			}); err != nil {
				t.Fatalf("apply std.graph/hello: %v", err)
			}
			waitPhase(t, admin, "std.graph", "hello", "Ready")
			if _, err := admin.ApplyResource(ctx, &convergev1.ApplyResourceRequest{
				Kind: "chart.hello", KindVersion: 1, Name: "hi",
				Spec: mustStruct(t, map[string]any{"message": "hello from a graph"}),
			}); err != nil {
				t.Fatalf("apply chart.hello/hi: %v", err)
			}
			// The instance's status is projected from its children once they
			// settle, which may come a moment after it turns Ready.
			waitResource(t, admin, "chart.hello", "hi", "Ready with status.said from its std.shell", composeTimeout,
				func(r *convergev1.Resource) bool {
					return r != nil && r.GetPhase() == "Ready" &&
						strings.Contains(fmt.Sprint(r.GetStatus().AsMap()["said"]), "hello from a graph")
				})

			_, err := k.client("").ApplyResource(ctx, &convergev1.ApplyResourceRequest{
				Kind: "std.shell", KindVersion: 1, Name: name + "-anon",
				Spec: mustStruct(t, map[string]any{"script": "true"}),
			})
			if code := connect.CodeOf(err); code != connect.CodePermissionDenied && code != connect.CodeUnauthenticated {
				t.Errorf("an anonymous apply: %v (code %v), want it refused", err, code)
			}
		})
	}
}

// renderChart renders the chart as "helm template" would (values schema
// included) and decodes what the test runs.
func renderChart(t *testing.T, vals map[string]any) []string {
	t.Helper()
	files, err := chartrender.Render(filepath.Join(bin.root, "deploy", "helm", "converge"), vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	var docs []string
	for name, content := range files {
		if strings.HasSuffix(name, ".yaml") {
			for _, d := range releaseutil.SplitManifests(content) {
				docs = append(docs, d)
			}
		}
	}
	return docs
}

// podSim plays the part of Kubernetes for one release: it runs each
// Deployment's containers as local processes, one replica each.
type podSim struct {
	t           *testing.T
	fullname    string
	dir         string
	deployments map[string]*appsv1.Deployment
	secrets     map[string]map[string][]byte
	configMaps  map[string]map[string]string
	services    map[string]*corev1.Service
	addr        map[string]string // Deployment -> host:port its "http" port listens on
	procs       map[string]*proc
}

func newPodSim(t *testing.T, docs []string) *podSim {
	t.Helper()
	k := &podSim{t: t, dir: t.TempDir(), deployments: map[string]*appsv1.Deployment{},
		secrets: map[string]map[string][]byte{}, configMaps: map[string]map[string]string{},
		services: map[string]*corev1.Service{}, addr: map[string]string{}, procs: map[string]*proc{}}
	for _, doc := range docs {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		decode := func(into any) {
			if err := yaml.UnmarshalStrict([]byte(doc), into); err != nil {
				t.Fatalf("rendered %s: %v\n%s", head.Kind, err, doc)
			}
		}
		switch head.Kind {
		case "Deployment":
			var d appsv1.Deployment
			decode(&d)
			k.deployments[d.Name] = &d
			k.addr[d.Name] = freeAddr(t)
			k.fullname = d.Labels["app.kubernetes.io/instance"] + "-converge"
		case "Secret":
			var s corev1.Secret
			decode(&s)
			data := map[string][]byte{}
			for key, v := range s.Data {
				data[key] = v
			}
			for key, v := range s.StringData {
				data[key] = []byte(v)
			}
			k.secrets[s.Name] = data
		case "ConfigMap":
			var c corev1.ConfigMap
			decode(&c)
			k.configMaps[c.Name] = c.Data
		case "Service":
			var s corev1.Service
			decode(&s)
			k.services[s.Name] = &s
		}
	}
	return k
}

// deploymentsExcept lists the Deployments whose component is not skip.
func (k *podSim) deploymentsExcept(skip string) []string {
	var names []string
	for name, d := range k.deployments {
		if d.Labels["app.kubernetes.io/component"] != skip {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func (k *podSim) secretValue(name, key string) string {
	k.t.Helper()
	v, ok := k.secrets[name][key]
	if !ok {
		k.t.Fatalf("the chart renders no Secret %s with key %s", name, key)
	}
	return string(v)
}

// client calls the control API through the first Service that selects a
// control-serving Deployment, with token as its bearer token.
func (k *podSim) client(token string) *client.Client {
	for _, d := range []string{k.fullname + "-all", k.fullname + "-control"} {
		if a, ok := k.addr[d]; ok {
			return client.New("http://"+a, client.WithBearerToken(token))
		}
	}
	k.t.Fatal("the chart renders no Deployment that serves the control API")
	return nil
}

func (k *podSim) waitReady(name string) {
	k.t.Helper()
	(&server{t: k.t, proc: k.procs[name], url: "http://" + k.addr[name]}).waitReady()
}

// start runs name's init containers to completion, then its container.
func (k *podSim) start(name string) {
	k.t.Helper()
	d, ok := k.deployments[name]
	if !ok {
		k.t.Fatalf("the chart renders no Deployment %s", name)
	}
	pod := d.Spec.Template.Spec
	for _, c := range pod.InitContainers {
		p := k.run(name, c, pod.Volumes)
		if code := p.wait(k.t, readyTimeout); code != 0 {
			k.t.Fatalf("%s: init container %s exited %d:\n%s", name, c.Name, code, p.output())
		}
	}
	if len(pod.Containers) != 1 {
		k.t.Fatalf("%s has %d containers, want 1", name, len(pod.Containers))
	}
	k.procs[name] = k.run(name, pod.Containers[0], pod.Volumes)
}

// run starts one container as a process: the binary its image names, its
// args and env with mount paths, Service names and the listen port
// rewritten to what exists on this machine.
func (k *podSim) run(pod string, c corev1.Container, vols []corev1.Volume) *proc {
	k.t.Helper()
	image := path.Base(strings.SplitN(c.Image, ":", 2)[0])
	binaries := map[string]string{"converge": bin.converge, "converge-stdworker": bin.stdworker}
	exe, ok := binaries[image]
	if !ok {
		k.t.Fatalf("%s/%s: image %s runs no binary this test knows (%v)", pod, c.Name, c.Image, binaries)
	}
	rewrite := k.mounts(pod, c, vols)
	for svc, s := range k.services {
		for dep, d := range k.deployments {
			if d.Labels["app.kubernetes.io/component"] == s.Spec.Selector["app.kubernetes.io/component"] {
				for _, port := range s.Spec.Ports {
					rewrite = append(rewrite, [2]string{fmt.Sprintf("://%s:%d", svc, port.Port), "://" + k.addr[dep]})
				}
			}
		}
	}
	_, port, _ := strings.Cut(k.addr[pod], ":")
	rewrite = append(rewrite, [2]string{"--listen=:" + fmt.Sprint(httpPort(c)), "--listen=127.0.0.1:" + port})
	// Longer paths first, so /etc/x/y is not rewritten as /etc/x.
	sort.Slice(rewrite, func(i, j int) bool { return len(rewrite[i][0]) > len(rewrite[j][0]) })
	apply := func(s string) string {
		for _, r := range rewrite {
			if strings.Contains(s, r[0]) {
				return strings.Replace(s, r[0], r[1], 1)
			}
		}
		return s
	}
	args := append(append([]string{}, c.Command...), c.Args...)
	for i := range args {
		args[i] = apply(args[i])
	}
	env := []string{"HOME=" + filepath.Join(k.dir, pod+"-home")}
	for _, e := range c.Env {
		v := e.Value
		if ref := e.ValueFrom; ref != nil {
			if ref.SecretKeyRef == nil {
				k.t.Fatalf("%s/%s: env %s comes from %+v, which this test cannot resolve", pod, c.Name, e.Name, ref)
			}
			v = k.secretValue(ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)
		}
		env = append(env, e.Name+"="+apply(v))
	}
	return startProcEnv(k.t, pod+"/"+c.Name, env, exe, args...)
}

// mounts writes the container's Secret and ConfigMap volumes as files and
// makes a directory for the others, returning how its mount paths map here.
func (k *podSim) mounts(pod string, c corev1.Container, vols []corev1.Volume) [][2]string {
	k.t.Helper()
	byName := map[string]corev1.Volume{}
	for _, v := range vols {
		byName[v.Name] = v
	}
	var rewrite [][2]string
	for _, m := range c.VolumeMounts {
		v, ok := byName[m.Name]
		if !ok {
			k.t.Fatalf("%s/%s mounts volume %s, which the pod does not define", pod, c.Name, m.Name)
		}
		dir := filepath.Join(k.dir, pod, m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			k.t.Fatal(err)
		}
		files := map[string][]byte{}
		switch {
		case v.Secret != nil:
			data, ok := k.secrets[v.Secret.SecretName]
			if !ok {
				k.t.Fatalf("%s: volume %s names Secret %s, which the chart does not render", pod, m.Name, v.Secret.SecretName)
			}
			files = data
		case v.ConfigMap != nil:
			data, ok := k.configMaps[v.ConfigMap.Name]
			if !ok {
				k.t.Fatalf("%s: volume %s names ConfigMap %s, which the chart does not render", pod, m.Name, v.ConfigMap.Name)
			}
			for key, s := range data {
				files[key] = []byte(s)
			}
		}
		for key, b := range files {
			if err := os.WriteFile(filepath.Join(dir, key), b, 0o600); err != nil {
				k.t.Fatal(err)
			}
		}
		target := dir
		if m.SubPath != "" {
			target = filepath.Join(dir, m.SubPath)
		}
		rewrite = append(rewrite, [2]string{m.MountPath, target})
	}
	return rewrite
}

// httpPort is the container port named http, where the chart listens.
func httpPort(c corev1.Container) int32 {
	for _, p := range c.Ports {
		if p.Name == "http" {
			return p.ContainerPort
		}
	}
	return -1
}

package helm_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestDefaults(t *testing.T) {
	r, vs := renderSet(t, "defaults")
	checkWiring(t, r, vs.existing...)
	if got := keys(r.deployments); strings.Join(got, ",") != fullname+"-broker,"+fullname+"-control" {
		t.Fatalf("deployments %v, want control and broker only", got)
	}
	if len(r.serviceMonitors) != 0 || len(r.networkPolicies) != 0 || len(r.configMaps) != 0 {
		t.Errorf("opt-in objects rendered by default: monitors %v, policies %v, configmaps %v",
			keys(r.serviceMonitors), keys(r.networkPolicies), keys(r.configMaps))
	}
	if len(r.pdbs) != 2 {
		t.Errorf("pdbs %v, want one per tier", keys(r.pdbs))
	}
	secret, ok := r.secrets[fullname+"-database"]
	if !ok {
		t.Fatalf("database Secret not rendered; have %v", keys(r.secrets))
	}
	if got := string(secret.Data["url"]); got != "postgres://converge:secret@db:5432/converge?sslmode=require" {
		t.Errorf("database Secret url = %q", got)
	}
	for _, role := range []string{"control", "broker"} {
		d := r.deployment(t, fullname+"-"+role)
		if *d.Spec.Replicas != 2 {
			t.Errorf("%s replicas %d, want 2", role, *d.Spec.Replicas)
		}
		if d.Spec.Template.Annotations["checksum/database"] == "" {
			t.Errorf("%s: no checksum/database annotation, so a URL change would not roll pods", role)
		}
		c := container(t, d)
		if c.Image != "ghcr.io/convergehq/converge:0.1.0" {
			t.Errorf("%s image %q, want the appVersion tag", role, c.Image)
		}
		requireArgs(t, c, "serve", "--role="+role, "--listen=:7070", "--migrate=true", "--log-format=json")
		forbidArgPrefix(t, c, "--metrics-listen")
		forbidArgPrefix(t, c, "--tls-")
		if role == "control" {
			requireArgs(t, c, "--max-backlog=10000", "--max-queue-wait=500ms")
		} else {
			forbidArgPrefix(t, c, "--max-")
		}
		e, ok := env(c, "CONVERGE_DATABASE_URL")
		if !ok || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != fullname+"-database" || e.ValueFrom.SecretKeyRef.Key != "url" {
			t.Errorf("%s: CONVERGE_DATABASE_URL = %+v, want secretKeyRef %s-database/url", role, e, fullname)
		}
		checkProbe(t, role+" liveness", c.LivenessProbe, "/healthz", "http", corev1.URISchemeHTTP)
		checkProbe(t, role+" startup", c.StartupProbe, "/healthz", "http", corev1.URISchemeHTTP)
		checkProbe(t, role+" readiness", c.ReadinessProbe, "/readyz", "http", corev1.URISchemeHTTP)
		if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 7070 {
			t.Errorf("%s ports %+v, want only http 7070", role, c.Ports)
		}
		s, ok := r.services[fullname+"-"+role]
		if !ok {
			t.Fatalf("service %s-%s not rendered", fullname, role)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 7070 {
			t.Errorf("service %s ports %+v, want 7070", role, s.Spec.Ports)
		}
	}
	if !strings.Contains(r.notes, "http://"+fullname+"-broker:7070") || !strings.Contains(r.notes, "--migrate=true") {
		t.Errorf("NOTES do not name the broker URL and migration strategy:\n%s", r.notes)
	}
}

func TestExistingSecret(t *testing.T) {
	r, vs := renderSet(t, "existing-secret")
	checkWiring(t, r, vs.existing...)
	if got := keys(r.secrets); strings.Join(got, ",") != fullname+"-tokens" {
		t.Errorf("secrets %v rendered, want only the generated tokens with an existing database Secret", got)
	}
	for _, role := range []string{"control", "broker"} {
		d := r.deployment(t, fullname+"-"+role)
		if _, ok := d.Spec.Template.Annotations["checksum/database"]; ok {
			t.Errorf("%s: checksum/database annotation without an inline URL", role)
		}
		c := container(t, d)
		requireArgs(t, c, "--migrate=false")
		e, _ := env(c, "CONVERGE_DATABASE_URL")
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != "converge-db" || e.ValueFrom.SecretKeyRef.Key != "dsn" {
			t.Errorf("%s: CONVERGE_DATABASE_URL = %+v, want secretKeyRef converge-db/dsn", role, e)
		}
	}
	if !strings.Contains(r.notes, "rollout restart") {
		t.Errorf("NOTES do not say how to pick up a rotated database Secret:\n%s", r.notes)
	}
}

func TestTLS(t *testing.T) {
	r, vs := renderSet(t, "tls")
	checkWiring(t, r, vs.existing...)
	for _, role := range []string{"control", "broker"} {
		d := r.deployment(t, fullname+"-"+role)
		c := container(t, d)
		requireArgs(t, c,
			"--tls-cert=/etc/converge/tls/tls.crt",
			"--tls-key=/etc/converge/tls/tls.key",
			"--tls-client-ca=/etc/converge/tls/ca.crt",
			"--tls-client-auth=require",
			"--allow-api-ids=spiffe://example.org/ns/ops/sa/conctl,spiffe://example.org/ns/ui/*",
			"--allow-worker-ids=spiffe://example.org/ns/workers/*",
			"--metrics-listen=:9090")
		if mountPath(c, "tls") != "/etc/converge/tls" {
			t.Errorf("%s: tls volume mounted at %q, want /etc/converge/tls", role, mountPath(c, "tls"))
		}
		v, ok := volume(d, "tls")
		if !ok || v.Secret == nil || v.Secret.SecretName != "converge-tls" {
			t.Errorf("%s: tls volume %+v, want Secret converge-tls", role, v)
		}
		// mTLS would refuse the kubelet, so the probes use the plaintext metrics listener.
		checkProbe(t, role+" liveness", c.LivenessProbe, "/healthz", "metrics", corev1.URISchemeHTTP)
		checkProbe(t, role+" readiness", c.ReadinessProbe, "/readyz", "metrics", corev1.URISchemeHTTP)
		s := r.services[fullname+"-"+role]
		if s == nil || s.Spec.Ports[0].AppProtocol == nil || *s.Spec.Ports[0].AppProtocol != "https" {
			t.Errorf("service %s: http port appProtocol not https", role)
		}
	}
	w := container(t, r.deployment(t, fullname+"-stdworker"))
	requireArgs(t, w, "--tls-ca=/etc/stdworker/tls/ca.crt", "--tls-cert=/etc/stdworker/tls/tls.crt", "--tls-key=/etc/stdworker/tls/tls.key")
	if e, _ := env(w, "CONVERGE_SERVER"); e.Value != "https://"+fullname+"-broker:7070" {
		t.Errorf("stdworker CONVERGE_SERVER = %q, want https broker URL", e.Value)
	}
	if v, ok := volume(r.deployment(t, fullname+"-stdworker"), "tls"); !ok || v.Secret == nil || v.Secret.SecretName != "converge-worker-tls" {
		t.Errorf("stdworker tls volume %+v, want Secret converge-worker-tls", v)
	}
}

func TestTLSProbesOnAPIPortUseHTTPS(t *testing.T) {
	r, vs := renderSet(t, "tls-probes-on-api-port")
	checkWiring(t, r, vs.existing...)
	for _, role := range []string{"control", "broker"} {
		c := container(t, r.deployment(t, fullname+"-"+role))
		checkProbe(t, role+" liveness", c.LivenessProbe, "/healthz", "http", corev1.URISchemeHTTPS)
		checkProbe(t, role+" readiness", c.ReadinessProbe, "/readyz", "http", corev1.URISchemeHTTPS)
	}
}

func TestMetricsAndServiceMonitor(t *testing.T) {
	r, vs := renderSet(t, "metrics")
	checkWiring(t, r, vs.existing...)
	for _, role := range []string{"control", "broker"} {
		c := container(t, r.deployment(t, fullname+"-"+role))
		requireArgs(t, c, "--metrics-listen=:9102")
		s := r.services[fullname+"-"+role]
		found := false
		for _, p := range s.Spec.Ports {
			if p.Name == "metrics" && p.Port == 9102 && p.TargetPort.String() == "metrics" {
				found = true
			}
		}
		if !found {
			t.Errorf("service %s: no metrics port 9102 -> metrics in %+v", role, s.Spec.Ports)
		}
		np, ok := r.networkPolicies[fullname+"-"+role]
		if !ok {
			t.Fatalf("networkpolicy %s not rendered; have %v", role, keys(r.networkPolicies))
		}
		if len(np.Spec.Ingress) != 2 || len(np.Spec.Ingress[1].From) != 1 ||
			np.Spec.Ingress[1].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
			t.Errorf("networkpolicy %s ingress %+v: want api rule and metrics rule from monitoring", role, np.Spec.Ingress)
		}
	}
	sm, ok := r.serviceMonitors[fullname]
	if !ok {
		t.Fatalf("ServiceMonitor %s not rendered; have %v", fullname, keys(r.serviceMonitors))
	}
	checkServiceMonitor(t, r, sm)
}

// checkServiceMonitor checks the CRD structurally: the fields the chart sets, and that its
// selector picks the server Services that expose the named port.
func checkServiceMonitor(t *testing.T, r *rendered, sm map[string]any) {
	t.Helper()
	var want struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels      map[string]string `json:"matchLabels"`
				MatchExpressions []struct {
					Key      string   `json:"key"`
					Operator string   `json:"operator"`
					Values   []string `json:"values"`
				} `json:"matchExpressions"`
			} `json:"selector"`
			NamespaceSelector struct {
				MatchNames []string `json:"matchNames"`
			} `json:"namespaceSelector"`
			Endpoints []struct {
				Port          string `json:"port"`
				Path          string `json:"path"`
				Scheme        string `json:"scheme"`
				Interval      string `json:"interval"`
				ScrapeTimeout string `json:"scrapeTimeout"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	b, err := yaml.Marshal(sm)
	if err != nil {
		t.Fatalf("ServiceMonitor: %v", err)
	}
	if sm["apiVersion"] != "monitoring.coreos.com/v1" || sm["kind"] != "ServiceMonitor" {
		t.Errorf("ServiceMonitor apiVersion/kind = %v/%v", sm["apiVersion"], sm["kind"])
	}
	if err := yaml.Unmarshal(b, &want); err != nil {
		t.Fatalf("ServiceMonitor: %v", err)
	}
	if want.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v: want release=prometheus from values", want.Metadata.Labels)
	}
	if len(want.Spec.Endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %+v, want 1", want.Spec.Endpoints)
	}
	ep := want.Spec.Endpoints[0]
	if ep.Port != "metrics" || ep.Path != "/metrics" || ep.Scheme != "http" || ep.Interval != "15s" || ep.ScrapeTimeout != "10s" {
		t.Errorf("ServiceMonitor endpoint %+v", ep)
	}
	if len(want.Spec.NamespaceSelector.MatchNames) != 1 || want.Spec.NamespaceSelector.MatchNames[0] != namespace {
		t.Errorf("ServiceMonitor namespaceSelector %v, want [%s]", want.Spec.NamespaceSelector.MatchNames, namespace)
	}
	selected := 0
	for name, s := range r.services {
		match := true
		for k, v := range want.Spec.Selector.MatchLabels {
			if s.Labels[k] != v {
				match = false
			}
		}
		for _, e := range want.Spec.Selector.MatchExpressions {
			if e.Operator != "In" || !contains(e.Values, s.Labels[e.Key]) {
				match = false
			}
		}
		if !match {
			continue
		}
		selected++
		hasMetrics := false
		for _, p := range s.Spec.Ports {
			hasMetrics = hasMetrics || p.Name == "metrics"
		}
		if !hasMetrics {
			t.Errorf("ServiceMonitor selects service %s, which has no metrics port", name)
		}
	}
	if selected != 2 {
		t.Errorf("ServiceMonitor selects %d services, want control and broker", selected)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestStdWorkerAndAllInOne(t *testing.T) {
	r, vs := renderSet(t, "stdworker")
	checkWiring(t, r, vs.existing...)
	if got := strings.Join(keys(r.deployments), ","); got != fullname+"-all,"+fullname+"-stdworker" {
		t.Fatalf("deployments %s, want the all-in-one server and stdworker", got)
	}
	requireArgs(t, container(t, r.deployment(t, fullname+"-all")), "--role=all")
	d := r.deployment(t, fullname+"-stdworker")
	if *d.Spec.Replicas != 3 {
		t.Errorf("stdworker replicas %d, want 3", *d.Spec.Replicas)
	}
	c := container(t, d)
	if c.Image != "ghcr.io/convergehq/converge-stdworker:0.1.0" {
		t.Errorf("stdworker image %q", c.Image)
	}
	requireArgs(t, c, "--kinds=std.shell@1,backup@1", "--parallelism=4", "--config=/etc/stdworker/stdworker.yaml",
		"--state-dir=/var/lib/stdworker", "--drain-timeout=30s")
	forbidArgPrefix(t, c, "--tls-")
	if _, ok := env(c, "CONVERGE_DATABASE_URL"); ok {
		t.Errorf("stdworker gets the database URL; workers must not")
	}
	if e, _ := env(c, "CONVERGE_SERVER"); e.Value != "http://"+fullname+"-all:7070" {
		t.Errorf("stdworker CONVERGE_SERVER = %q, want the all-in-one Service", e.Value)
	}
	if mountPath(c, "state") != "/var/lib/stdworker" {
		t.Errorf("stdworker state dir not on a writable volume")
	}
	cm, ok := r.configMaps[fullname+"-stdworker"]
	if !ok {
		t.Fatalf("stdworker ConfigMap not rendered")
	}
	var cfg struct {
		Kinds []struct {
			Kind     string `json:"kind"`
			Version  int    `json:"version"`
			Provider string `json:"provider"`
		} `json:"kinds"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["stdworker.yaml"]), &cfg); err != nil {
		t.Fatalf("stdworker.yaml: %v", err)
	}
	if len(cfg.Kinds) != 1 || cfg.Kinds[0].Kind != "backup" || cfg.Kinds[0].Provider != "stdio" {
		t.Errorf("stdworker.yaml kinds %+v", cfg.Kinds)
	}
	pdb, ok := r.pdbs[fullname+"-stdworker"]
	if !ok || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.MinAvailable != nil {
		t.Errorf("stdworker pdb %+v, want maxUnavailable 1 only", pdb)
	}
}

func checkProbe(t *testing.T, what string, p *corev1.Probe, path, port string, scheme corev1.URIScheme) {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Errorf("%s probe missing or not httpGet", what)
		return
	}
	if g := p.HTTPGet; g.Path != path || g.Port.String() != port || g.Scheme != scheme {
		t.Errorf("%s probe = %s %s %s, want %s %s %s", what, g.Scheme, g.Port.String(), g.Path, scheme, port, path)
	}
}

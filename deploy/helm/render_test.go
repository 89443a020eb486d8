package helm_test

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/convergehq/converge/deploy/helm/chartrender"
)

const (
	chartDir    = "converge"
	releaseName = chartrender.ReleaseName
	namespace   = chartrender.Namespace
	fullname    = "rel-converge"
)

// rendered holds every object of one render, decoded strictly into its Kubernetes type.
type rendered struct {
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	secrets         map[string]*corev1.Secret
	configMaps      map[string]*corev1.ConfigMap
	pdbs            map[string]*policyv1.PodDisruptionBudget
	networkPolicies map[string]*networkingv1.NetworkPolicy
	pvcs            map[string]*corev1.PersistentVolumeClaim
	serviceMonitors map[string]map[string]any
	notes           string
}

// renderValues renders the chart as "helm template" does, schema validation included.
func renderValues(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	return chartrender.Render(chartDir, vals)
}

func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return v.AsMap()
}

// renderDecoded renders vals (what names them in failures) and decodes every document strictly.
func renderDecoded(t *testing.T, file string, vals map[string]any) *rendered {
	t.Helper()
	out, err := renderValues(t, vals)
	if err != nil {
		t.Fatalf("render %s: %v", file, err)
	}
	r := &rendered{
		deployments:     map[string]*appsv1.Deployment{},
		services:        map[string]*corev1.Service{},
		secrets:         map[string]*corev1.Secret{},
		configMaps:      map[string]*corev1.ConfigMap{},
		pdbs:            map[string]*policyv1.PodDisruptionBudget{},
		networkPolicies: map[string]*networkingv1.NetworkPolicy{},
		pvcs:            map[string]*corev1.PersistentVolumeClaim{},
		serviceMonitors: map[string]map[string]any{},
	}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			r.notes = out[name]
			continue
		}
		for _, doc := range releaseutil.SplitManifests(out[name]) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			if err := r.add([]byte(doc)); err != nil {
				t.Fatalf("%s: %s: %v\n%s", file, name, err, doc)
			}
		}
	}
	return r
}

func strict[T any](doc []byte, into map[string]*T, name func(*T) string) error {
	obj := new(T)
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return err
	}
	n := name(obj)
	if _, dup := into[n]; dup {
		return fmt.Errorf("duplicate object name %q", n)
	}
	into[n] = obj
	return nil
}

func (r *rendered) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.APIVersion + " " + tm.Kind {
	case "apps/v1 Deployment":
		return strict(doc, r.deployments, func(o *appsv1.Deployment) string { return o.Name })
	case "v1 Service":
		return strict(doc, r.services, func(o *corev1.Service) string { return o.Name })
	case "v1 Secret":
		return strict(doc, r.secrets, func(o *corev1.Secret) string { return o.Name })
	case "v1 PersistentVolumeClaim":
		return strict(doc, r.pvcs, func(o *corev1.PersistentVolumeClaim) string { return o.Name })
	case "v1 ConfigMap":
		return strict(doc, r.configMaps, func(o *corev1.ConfigMap) string { return o.Name })
	case "policy/v1 PodDisruptionBudget":
		return strict(doc, r.pdbs, func(o *policyv1.PodDisruptionBudget) string { return o.Name })
	case "networking.k8s.io/v1 NetworkPolicy":
		return strict(doc, r.networkPolicies, func(o *networkingv1.NetworkPolicy) string { return o.Name })
	case "monitoring.coreos.com/v1 ServiceMonitor":
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return err
		}
		meta, _ := m["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		r.serviceMonitors[name] = m
		return nil
	}
	return fmt.Errorf("unexpected object %s %s", tm.APIVersion, tm.Kind)
}

func (r *rendered) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, ok := r.deployments[name]
	if !ok {
		t.Fatalf("deployment %q not rendered; have %v", name, keys(r.deployments))
	}
	return d
}

func keys[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("deployment %s: %d containers, want 1", d.Name, n)
	}
	return d.Spec.Template.Spec.Containers[0]
}

func hasArg(c corev1.Container, arg string) bool {
	for _, a := range c.Args {
		if a == arg {
			return true
		}
	}
	return false
}

func requireArgs(t *testing.T, c corev1.Container, args ...string) {
	t.Helper()
	for _, a := range args {
		if !hasArg(c, a) {
			t.Errorf("container %s: arg %q missing from %q", c.Name, a, c.Args)
		}
	}
}

func forbidArgPrefix(t *testing.T, c corev1.Container, prefix string) {
	t.Helper()
	for _, a := range c.Args {
		if strings.HasPrefix(a, prefix) {
			t.Errorf("container %s: unexpected arg %q", c.Name, a)
		}
	}
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func mountPath(c corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func volume(d *appsv1.Deployment, name string) (corev1.Volume, bool) {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

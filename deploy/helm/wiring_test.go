package helm_test

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkWiring asserts what must hold in every render: selectors select their pods, Services and
// probes point at declared container ports, secrets and config maps referenced exist (or are
// the named existing Secret), and pods run non-root on a read-only root filesystem.
func checkWiring(t *testing.T, r *rendered, existingSecrets ...string) {
	t.Helper()
	external := map[string]bool{}
	for _, s := range existingSecrets {
		external[s] = true
	}
	for name, d := range r.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Errorf("deployment %s: bad or empty selector %v: %v", name, d.Spec.Selector, err)
			continue
		}
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("deployment %s: selector %v does not match pod labels %v", name, d.Spec.Selector, d.Spec.Template.Labels)
		}
		for other, o := range r.deployments {
			if other != name && sel.Matches(labels.Set(o.Spec.Template.Labels)) {
				t.Errorf("deployment %s: selector also matches pods of %s", name, other)
			}
		}
		if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && mountsOneNodeClaim(r, d) {
			// A surge pod on another node could not mount the claim.
		} else if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || d.Spec.Strategy.RollingUpdate == nil {
			t.Errorf("deployment %s: strategy %+v, want RollingUpdate", name, d.Spec.Strategy)
		} else if mu := d.Spec.Strategy.RollingUpdate.MaxUnavailable; mu == nil || mu.IntValue() != 0 {
			t.Errorf("deployment %s: rollingUpdate.maxUnavailable %v, want 0", name, mu)
		}
		pod := d.Spec.Template.Spec
		if psc := pod.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("deployment %s: pod securityContext.runAsNonRoot not true", name)
		}
		c := container(t, d)
		if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("deployment %s: container securityContext %+v: want readOnlyRootFilesystem, no privilege escalation", name, sc)
		}
		if mountPath(c, "tmp") != "/tmp" {
			t.Errorf("deployment %s: no writable /tmp (emptyDir) under the read-only root filesystem", name)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("deployment %s: resources %+v: want cpu request and memory limit", name, c.Resources)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		for kind, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			if p == nil {
				if d.Labels["app.kubernetes.io/component"] != "stdworker" {
					t.Errorf("deployment %s: no %s probe", name, kind)
				}
				continue
			}
			if p.HTTPGet == nil {
				t.Errorf("deployment %s: %s probe is not httpGet", name, kind)
				continue
			}
			if _, ok := ports[p.HTTPGet.Port.String()]; !ok {
				t.Errorf("deployment %s: %s probe port %q is not a container port %v", name, kind, p.HTTPGet.Port.String(), ports)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref := e.ValueFrom.SecretKeyRef
				s, ok := r.secrets[ref.Name]
				switch {
				case ok:
					if _, has := s.Data[ref.Key]; !has {
						t.Errorf("deployment %s: env %s references key %q that Secret %s lacks", name, e.Name, ref.Key, ref.Name)
					}
				case !external[ref.Name]:
					t.Errorf("deployment %s: env %s references Secret %q that is neither rendered nor expected to exist", name, e.Name, ref.Name)
				}
			}
		}
		for _, v := range pod.Volumes {
			if v.ConfigMap != nil {
				if _, ok := r.configMaps[v.ConfigMap.Name]; !ok {
					t.Errorf("deployment %s: volume %s references ConfigMap %q that is not rendered", name, v.Name, v.ConfigMap.Name)
				}
			}
			if v.PersistentVolumeClaim != nil {
				if _, ok := r.pvcs[v.PersistentVolumeClaim.ClaimName]; !ok && !external[v.PersistentVolumeClaim.ClaimName] {
					t.Errorf("deployment %s: volume %s references claim %q that is neither rendered nor expected", name, v.Name, v.PersistentVolumeClaim.ClaimName)
				}
			}
			if v.Secret != nil {
				if _, ok := r.secrets[v.Secret.SecretName]; !ok && !external[v.Secret.SecretName] {
					t.Errorf("deployment %s: volume %s references Secret %q that is neither rendered nor expected", name, v.Name, v.Secret.SecretName)
				}
			}
			if mountPath(c, v.Name) == "" {
				t.Errorf("deployment %s: volume %s is not mounted", name, v.Name)
			}
		}
	}
	for name, s := range r.services {
		d := selectedDeployment(t, r, "service "+name, labels.SelectorFromSet(s.Spec.Selector))
		if d == nil {
			continue
		}
		c := container(t, d)
		for _, sp := range s.Spec.Ports {
			if !containerHasPort(c, sp.TargetPort) {
				t.Errorf("service %s: port %s targets %q, which deployment %s does not declare", name, sp.Name, sp.TargetPort.String(), d.Name)
			}
		}
	}
	for name, p := range r.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil {
			t.Errorf("pdb %s: selector: %v", name, err)
			continue
		}
		selectedDeployment(t, r, "pdb "+name, sel)
	}
	for name, np := range r.networkPolicies {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Errorf("networkpolicy %s: selector: %v", name, err)
			continue
		}
		d := selectedDeployment(t, r, "networkpolicy "+name, sel)
		if d == nil {
			continue
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || !containerHasPort(container(t, d), *p.Port) {
					t.Errorf("networkpolicy %s: port %v is not a port of deployment %s", name, p.Port, d.Name)
				}
			}
		}
	}
}

// mountsOneNodeClaim reports whether d mounts a rendered claim that only one node can mount.
func mountsOneNodeClaim(r *rendered, d *appsv1.Deployment) bool {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		if c, ok := r.pvcs[v.PersistentVolumeClaim.ClaimName]; ok && !slices.Contains(c.Spec.AccessModes, corev1.ReadWriteMany) {
			return true
		}
	}
	return false
}

// selectedDeployment returns the one deployment whose pods sel matches, failing otherwise.
func selectedDeployment(t *testing.T, r *rendered, what string, sel labels.Selector) *appsv1.Deployment {
	t.Helper()
	var found []*appsv1.Deployment
	for _, d := range r.deployments {
		if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Errorf("%s: selector %s matches %d deployments, want 1", what, sel, len(found))
		return nil
	}
	return found[0]
}

func containerHasPort(c corev1.Container, p intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return true
		}
	}
	return false
}

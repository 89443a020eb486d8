package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// policyOf reads greeting/1's policy over REST.
func policyOf(t *testing.T, base string) map[string]any {
	t.Helper()
	a := send(t, base, http.MethodGet, "/api/v1/kinds/greeting/versions/1", "", "")
	if a.status != http.StatusOK {
		t.Fatalf("GET kind: %s", a)
	}
	var doc struct {
		Manifest struct{ Policy map[string]any }
	}
	if err := json.Unmarshal([]byte(a.raw), &doc); err != nil {
		t.Fatalf("GET kind: %v: %s", err, a.raw)
	}
	return doc.Manifest.Policy
}

// TestPatchChangesOnlyTheFieldsNamed: a REST PATCH of a kind policy
// changes the fields its body names, or those update_mask lists (in the
// docs' snake_case or in lowerCamelCase), and nothing else.
func TestPatchChangesOnlyTheFieldsNamed(t *testing.T) {
	base, _, ctl := serverWith(t, nil)
	applyGreeting(t, ctl)
	const route = "/api/v1/kinds/greeting/versions/1/policy"
	patch := func(query, body string) answer {
		t.Helper()
		target := route
		if query != "" {
			target += "?" + query
		}
		return send(t, base, http.MethodPatch, target, "application/json", body)
	}
	if a := patch("", `{"max_inflight":10}`); a.status != http.StatusOK {
		t.Fatalf("PATCH max_inflight: %s", a)
	}
	if a := patch("", `{"resync_interval_seconds":300}`); a.status != http.StatusOK {
		t.Fatalf("PATCH resync_interval_seconds: %s", a)
	}
	p := policyOf(t, base)
	if p["max_inflight"] != float64(10) || p["resync_interval_seconds"] != float64(300) {
		t.Fatalf("after PATCHing max_inflight then resync: policy %v; want both set", p)
	}
	// A mask limits the change to the fields it lists, whatever else the
	// body holds.
	for _, mask := range []string{"max_inflight", "maxInflight"} {
		if a := patch("update_mask="+mask, `{"max_inflight":5,"resync_interval_seconds":60}`); a.status != http.StatusOK {
			t.Fatalf("PATCH with update_mask=%s: %s", mask, a)
		}
		if p := policyOf(t, base); p["max_inflight"] != float64(5) || p["resync_interval_seconds"] != float64(300) {
			t.Fatalf("after PATCH update_mask=%s: policy %v; want max_inflight 5, resync unchanged at 300", mask, p)
		}
	}
	for _, c := range []struct{ query, body, naming string }{
		{"", `{}`, "names no field"},
		{"", `{"max_inflight":3,"bogus":1}`, "bogus"},
		{"update_mask=max_inflight,bogus", `{"max_inflight":3}`, "bogus"},
	} {
		if a := patch(c.query, c.body); a.status != http.StatusBadRequest || !strings.Contains(a.message, c.naming) {
			t.Errorf("PATCH ?%s %s: %s; want 400 naming %q", c.query, c.body, a, c.naming)
		}
	}
	if p := policyOf(t, base); p["max_inflight"] != float64(5) {
		t.Fatalf("a refused PATCH changed the policy: %v", p)
	}
}

package stdterraform

import (
	"encoding/json"
	"testing"
)

// FuzzMainConfig: whatever a spec and a provider config hold, the
// configuration written for terraform is JSON in which no string (nor
// object key) is a template terraform would evaluate.
func FuzzMainConfig(f *testing.F) {
	f.Add([]byte(`{"rfc3339":"2024-01-02T03:04:05Z","triggers":{"${a}":"%{if true}x%{endif}"}}`), []byte(`{"region":"${env}"}`))
	f.Add([]byte(`{"import_id":"$${x}","n":1e3,"l":[["$$${y}"]]}`), []byte(`null`))
	f.Add([]byte(`{"import_id":5}`), []byte(`[]`))
	b := &Binding{Source: "hashicorp/time", Version: "0.14.2", Type: "time_static"}
	f.Fuzz(func(t *testing.T, spec, provider []byte) {
		s, err := parseGenSpec(spec)
		if err != nil {
			return
		}
		raw, err := mainConfig(b, provider, s, true)
		if err != nil {
			return
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("main.tf.json is not JSON: %v\n%s", err, raw)
		}
		var walk func(v any)
		check := func(s string) {
			// Terraform reads "$${" as a literal "${" (and "%%{" as
			// "%{"), any '$' before it as itself: every "${" must be the
			// tail of a "$${".
			for i := 1; i < len(s); i++ {
				if s[i] != '{' || (s[i-1] != '$' && s[i-1] != '%') {
					continue
				}
				if i < 2 || s[i-2] != s[i-1] {
					t.Fatalf("template %q survives in main.tf.json", s)
				}
			}
		}
		walk = func(v any) {
			switch x := v.(type) {
			case string:
				check(x)
			case map[string]any:
				for k, e := range x {
					check(k)
					walk(e)
				}
			case []any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(doc)
	})
}

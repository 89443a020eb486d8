package tfgen

import (
	"os"
	"testing"
)

// FuzzGenerate: whatever the provider schema document holds, parsing and
// generating return kinds, skipped types or an error, never a panic, and
// every kind generated renders.
func FuzzGenerate(f *testing.F) {
	if raw, err := os.ReadFile("testdata/time-0.14.2.json"); err == nil {
		f.Add(raw)
	}
	f.Add([]byte(`{"format_version":"1.0","provider_schemas":{"registry.terraform.io/hashicorp/time":{"provider":{"block":{}},"resource_schemas":{"time_x":{"block":{"attributes":{"a":{"type":["object",{"b":["list",["tuple",["string"]]]},["b"]],"optional":true}},"block_types":{"c":{"nesting_mode":"map","block":{}}}}}}}}}`))
	f.Add([]byte(`{"format_version":"1.0","provider_schemas":{"registry.terraform.io/hashicorp/time":{"resource_schemas":{"time_y":{"block":{"attributes":{"n":{"nested_type":{"nesting_mode":"set","attributes":{"m":{"type":"number","required":true}}},"optional":true}}}}}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseSchemas(raw)
		if err != nil {
			return
		}
		kinds, _, err := Generate(s, timeOpts("0.14.2"))
		if err != nil {
			return
		}
		for _, k := range kinds {
			// The server's rules may refuse what the mapping produced (a
			// schema past its size limit, say); Write reports that. Here
			// only a panic fails.
			_ = checkLegal(k.Manifest)
			if _, err := render(k.Manifest, command); err != nil {
				t.Errorf("%s: rendering: %v", k.Manifest.Kind, err)
			}
		}
	})
}

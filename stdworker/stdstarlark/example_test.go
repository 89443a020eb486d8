package stdstarlark_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
	"github.com/convergehq/converge/stdworker/stdstarlark"
)

// A kind composed by a one-file bundle: stdworker registers the provider on
// the kind's worker with the settings of its configuration file, whose
// relative paths are relative to that file's directory (WithBaseDir).
func ExampleNew() {
	dir, err := os.MkdirTemp("", "stdstarlark-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	main := `
def compose(ctx):
    net = child("network", ctx.name + "-net", {"cidr": ctx.spec["cidr"]})
    vm = child("vm", ctx.name + "-vm")
    return {
        "children": [net, vm],
        "edges": [depends(vm, net, flows = {"/status/id": "/spec/network_id"})],
        "status": {"children": 2},
    }
`
	if err := os.MkdirAll(filepath.Join(dir, "landing"), 0o755); err != nil {
		fmt.Println(err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "landing", "main.star"), []byte(main), 0o644); err != nil {
		fmt.Println(err)
		return
	}

	manifest := &convergev1.KindManifest{
		Kind: "landing", KindVersion: 1,
		Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}},
	}
	w, err := converge.NewWorker("http://localhost:7070")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = stdstarlark.New(stdstarlark.WithBaseDir(dir)).Register(context.Background(), w,
		provider.Served{Manifest: manifest, Settings: json.RawMessage(`{"dir": "landing"}`)},
		provider.Env{StateDir: dir})
	fmt.Println(err)
	// Output: <nil>
}

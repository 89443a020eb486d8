package stdterraform_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
	"github.com/convergehq/converge/stdworker/stdterraform"
)

// stdworker registers the provider on the worker of each kind version it
// serves; here, std.terraform with settings making OpenTofu the default
// binary and PostgreSQL the state backend (the connection string comes from
// PG_CONN_STR in the worker's environment).
func ExampleNew() {
	stateDir, err := os.MkdirTemp("", "stdterraform-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(stateDir)

	manifest := &convergev1.KindManifest{
		Kind: "std.terraform", KindVersion: 1, Finalizer: "std.terraform/destroy",
		Reactions: []*convergev1.Reaction{
			{Name: "apply", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "destroy", Trigger: "deleteRequested", Emits: []string{"finalizer"}},
		},
	}
	settings := json.RawMessage(`{"binary": "tofu", "backend": {"type": "pg"}}`)
	w, err := converge.NewWorker("http://localhost:7070")
	if err != nil {
		fmt.Println(err)
		return
	}
	err = stdterraform.New().Register(context.Background(), w,
		provider.Served{Manifest: manifest, Settings: settings}, provider.Env{StateDir: stateDir})
	fmt.Println(err)
	// Output: <nil>
}

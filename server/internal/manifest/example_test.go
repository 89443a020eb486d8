package manifest_test

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/trigger"
)

func ExampleCompile() {
	m := &convergev1.KindManifest{}
	err := protojson.Unmarshal([]byte(`{
		"kind": "web.site",
		"kind_version": 1,
		"spec_schema": {"type": "object", "properties": {"domain": {"type": "string"}}},
		"reactions": [
			{"name": "compose", "trigger": "specChange", "emits": ["children", "status"]},
			{"name": "teardown", "trigger": "deleteRequested", "emits": ["status"]}
		]
	}`), m)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = manifest.Compile(m)
	fmt.Println(err)
	// Output:
	// reactions[1] "teardown": M4: deleteRequested needs the manifest's finalizer
	// reactions[1].emits "teardown": M5: deleteRequested must emit finalizer: the resource is removed only when its finalizer is cleared
}

func ExampleKind_Reaction() {
	m := &convergev1.KindManifest{
		Kind:        "greeting",
		KindVersion: 1,
		Reactions: []*convergev1.Reaction{
			{Name: "greet", Trigger: trigger.SpecChange, Emits: []string{manifest.EmitStatus}},
		},
	}
	k, err := manifest.Compile(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, ok := k.Reaction(trigger.SpecChange)
	fmt.Println(r.GetName(), ok, k.IsComposite(), k.Policy.TaskDeadline)
	// Output:
	// greet true false 5m0s
}

package main

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// readManifests returns the kind manifests (documents with "type:
// manifest") in data, which came from source. It reads YAML or JSON
// exactly as conctl apply does, so it refuses what conctl would refuse,
// with the same messages; other documents (resources, provider configs,
// reactor bindings) are skipped.
func readManifests(source string, data []byte) ([]manifest, error) {
	docs, err := document.Parse(source, data)
	if err != nil {
		return nil, err
	}
	var out []manifest
	for _, d := range docs {
		if km, ok := d.Message.(*convergev1.KindManifest); ok {
			out = append(out, fromProto(km))
		}
	}
	return out, nil
}

func fromProto(km *convergev1.KindManifest) manifest {
	m := manifest{
		Kind:        km.GetKind(),
		Version:     int(km.GetKindVersion()),
		Description: km.GetDescription(),
		Spec:        schemaOf(km.GetSpecSchema()),
		Status:      schemaOf(km.GetStatusSchema()),
		Config:      schemaOf(km.GetConfigSchema()),
	}
	for _, r := range km.GetReactions() {
		m.Reactions = append(m.Reactions, reaction{Name: r.GetName(), Trigger: r.GetTrigger(), Verb: r.GetVerb(), Description: r.GetDescription()})
	}
	for _, op := range km.GetOperations() {
		m.Operations = append(m.Operations, operation{Verb: op.GetVerb(), Description: op.GetDescription(), Input: schemaOf(op.GetInputSchema())})
	}
	return m
}

// schemaOf is a schema as JSON values (maps, slices, float64s); nil when
// there is none.
func schemaOf(s *structpb.Struct) any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

// dedupe refuses a kind version given twice.
func dedupe(ms []manifest) error {
	seen := map[string]bool{}
	for _, m := range ms {
		key := fmt.Sprintf("%s\x00%d", m.Kind, m.Version)
		if seen[key] {
			return fmt.Errorf("kind %q version %d: appears twice", m.Kind, m.Version)
		}
		seen[key] = true
	}
	return nil
}

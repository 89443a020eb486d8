package stdcel

import (
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// statusValidator checks a projected status against the status_schema the
// graph gave, so a status the server would refuse (and fail the instance
// for, terminally) is held back instead while its values are missing.
func statusValidator(s map[string]any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource("status_schema.json", s); err != nil {
		return nil, err
	}
	return c.Compile("status_schema.json")
}

// checkStatus reports why status does not satisfy the graph's
// status_schema, or nil.
func (g *Graph) checkStatus(status map[string]any) error {
	if g.statusCheck == nil {
		return nil
	}
	if err := g.statusCheck.Validate(status); err != nil {
		return fmt.Errorf("the projected status does not match status_schema yet: %v", err)
	}
	return nil
}

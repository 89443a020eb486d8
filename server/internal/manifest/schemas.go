package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/server/internal/schema"
)

// compiledSchemas are a manifest's schemas; nil means "anything goes".
type compiledSchemas struct {
	spec, status, config *schema.Schema
	inputs               map[string]*schema.Schema // by verb
}

// compileSchemas compiles the four kinds of schema (M23) and checks that
// specs and statuses are described as objects (M24).
func (c *checker) compileSchemas() compiledSchemas {
	out := compiledSchemas{
		spec:   c.compileSchema("spec_schema", "specs", c.m.GetSpecSchema()),
		status: c.compileSchema("status_schema", "statuses", c.m.GetStatusSchema()),
		config: c.compileSchema("config_schema", "", c.m.GetConfigSchema()),
		inputs: map[string]*schema.Schema{},
	}
	for j, op := range c.m.GetOperations() {
		s := c.compileSchema(fmt.Sprintf("operations[%d].input_schema", j), "", op.GetInputSchema())
		if _, dup := out.inputs[op.GetVerb()]; !dup {
			out.inputs[op.GetVerb()] = s
		}
	}
	return out
}

// compileSchema compiles one schema. objects, when set, names what the
// schema describes ("specs") and requires it to describe an object.
func (c *checker) compileSchema(field, objects string, st *structpb.Struct) *schema.Schema {
	if st == nil {
		return nil
	}
	doc := st.AsMap()
	s, err := schema.Compile(field, doc)
	if err != nil {
		var ce *schema.CompileError
		if !errors.As(err, &ce) {
			c.add(field, "", RuleSchemaCompiles, "%v", err)
			return nil
		}
		for _, v := range ce.Violations {
			c.add(field+v.Path, "", RuleSchemaCompiles, "%s", v.Message)
		}
		return nil
	}
	for _, at := range s.LeakySecrets() {
		c.add(field+at, "", RuleSecretNotPublished,
			"a secret property (writeOnly or %s) must not set %s: the schema would publish a value of the secret",
			schema.SecretKeyword, at[strings.LastIndex(at, "/")+1:])
	}
	if objects != "" && !describesObject(doc["type"]) {
		got, _ := json.Marshal(doc["type"])
		c.add(field+"/type", "", RuleSchemaDescribesObject, "must allow type \"object\" (or be left out): %s are JSON objects, but type is %s", objects, got)
	}
	return s
}

// describesObject reports whether a schema's "type" keyword admits objects.
func describesObject(t any) bool {
	switch t := t.(type) {
	case nil:
		return true
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	default:
		return false
	}
}

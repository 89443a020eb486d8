package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Violation is one way an instance (or a schema document) breaks the rules.
type Violation struct {
	// Path is a JSON pointer (RFC 6901) into the checked document; "" is
	// the root.
	Path string
	// Message says what is wrong, e.g. "must be >= 1".
	Message string
}

// String renders the violation as "/path: message", showing the root as "/".
func (v Violation) String() string {
	return DisplayPointer(v.Path) + ": " + v.Message
}

// ValidationError is returned by Validate when an instance does not
// conform. Violations are sorted by path, then message.
type ValidationError struct {
	Violations []Violation
}

// maxRendered caps how many violations Error strings spell out.
const maxRendered = 10

// Error renders the first violations as "/replicas: must be >= 1", joined
// by "; ", and says how many more there are.
func (e *ValidationError) Error() string {
	parts := make([]string, 0, maxRendered+1)
	for i, v := range e.Violations {
		if i == maxRendered {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Violations)-maxRendered))
			break
		}
		parts = append(parts, v.String())
	}
	return strings.Join(parts, "; ")
}

// Validate checks instance against the schema. It returns nil or a
// *ValidationError listing every violation. The instance may use float64
// or json.Number numbers; it must respect MaxDepth and the number limits.
// A nil *Schema accepts every instance. Validate is safe for concurrent use.
func (s *Schema) Validate(instance any) (err error) {
	if s == nil {
		return nil
	}
	norm, err := normalize(instance)
	if err != nil {
		var ve *valueError
		if errors.As(err, &ve) {
			return &ValidationError{Violations: []Violation{ve.violation()}}
		}
		return err
	}
	defer func() {
		// The library panics on states it considers impossible; a request
		// must never take the server down with it.
		if r := recover(); r != nil {
			err = &ValidationError{Violations: []Violation{{Message: fmt.Sprintf("validator failed: %v", r)}}}
		}
	}()
	verr := s.compiled.Validate(norm)
	if verr == nil {
		return nil
	}
	var lib *jsonschema.ValidationError
	if !errors.As(verr, &lib) {
		return &ValidationError{Violations: []Violation{{Message: verr.Error()}}}
	}
	vs := violations(lib, norm, "")
	if len(vs) == 0 {
		vs = []Violation{{Message: "does not match the schema"}}
	}
	return &ValidationError{Violations: s.withholdSecrets(vs)}
}

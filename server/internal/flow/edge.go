package flow

// Spec is one value flow as an edge declares it: a source (From, a JSON
// pointer into the dependency's status, or Expr, a CEL expression over its
// status and spec) and To, a JSON pointer into the dependent's spec.
type Spec struct {
	From string `json:"from,omitempty"`
	Expr string `json:"expr,omitempty"`
	To   string `json:"to"`
}

// EvalAll compiles (through c) and evaluates an edge's flows, in order,
// over its dependency's status and spec, and returns the writes they make
// in the dependent's spec. On the first flow that fails it returns that
// flow and its error: a *CompileError, an error wrapping ErrMissing (the
// value does not exist yet) or the evaluation's error.
func EvalAll(c *Cache, flows []Spec, status, spec any) ([]Write, *Spec, error) {
	writes := make([]Write, 0, len(flows))
	for i := range flows {
		f := &flows[i]
		p, err := c.Compile(f.From, f.Expr, f.To)
		if err != nil {
			return nil, f, err
		}
		v, err := p.Eval(status, spec)
		if err != nil {
			return nil, f, err
		}
		writes = append(writes, Write{To: p.To(), Value: v})
	}
	return writes, nil, nil
}

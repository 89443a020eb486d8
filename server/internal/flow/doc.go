// Package flow computes value flows: the values a composite's edges copy
// from a dependency into its dependent's spec.
//
// A flow has a source and a target. The source is either "from", an RFC
// 6901 JSON pointer into the dependency's status ("/account_id"), or
// "expr", a CEL expression over the dependency's status and spec
// (`status.cidr + "/24"`). The target "to" is a JSON pointer into the
// dependent's spec. Compile checks a flow once, like a compiler, and
// reports each problem with its field and position; Program.Eval computes
// the value each time the dependency syncs; Apply writes the values into
// a copy of the dependent's spec and says whether anything changed; Cache
// keeps compiled flows.
//
// # Missing is not failed
//
// A dependency often syncs before its status holds every value its
// dependents need. Eval reports that case with an error wrapping
// ErrMissing that names the missing value ("status has no /vpc/id yet"),
// so the caller can wait for the next sync. Everything else (a selection
// into a value of the wrong type, a runtime error, the cost limit) is an
// *EvalError, which the same inputs reproduce. A null status or spec
// counts as an empty object.
//
// # CEL
//
// Expressions see two variables, status and spec, declared as JSON objects
// (map(string, dyn)); the values inside are typed when the flow runs. The
// standard library is available, plus optional types (status.?a.orValue(x))
// and the strings, lists, sets, math and encoders (base64) extensions.
// Nothing reads the clock or has side effects, and timestamps default to
// UTC, so a flow is a pure function of its inputs.
//
// Numbers: a JSON number with a whole value that fits in int64 (within
// ±2^53 when it arrives as a float64) is a CEL int, any other number a
// CEL double, whichever way the document was decoded. CEL does not mix int
// and double in arithmetic: write double(status.ratio) * 1.5 when a field
// may hold whole numbers.
//
// Results are plain decoded JSON: map[string]any, []any, string, bool, nil
// and json.Number for every number (ints and uints exactly, doubles in
// their shortest round-trip form). Timestamps and durations become the
// strings string() would give (RFC 3339, "90s"); an optional becomes its
// value, and optional.none() counts as missing. Bytes, types, NaN and
// infinities have no JSON form and fail.
//
// # Limits
//
// Expressions are at most MaxExprLength characters. An evaluation is
// stopped with an *EvalError when it exceeds CostLimit (CEL's measure of
// work, which charges string and list operations by size), when its loops
// would exceed MaxLoopIterations, or, as a last resort, after
// EvalTimeout. Compile refuses an expression that exceeds CostLimit even
// on empty inputs. It does not refuse expressions that could exceed the
// limits on large inputs: status and spec are untyped here, so a worst
// case estimate would assume every string and list in them as large as
// the whole document and refuse ordinary flows such as
// `status.subnets.map(s, s.zone + "/" + s.id)`. A result is at most
// limits.MaxSpecBytes as JSON and 64 levels deep.
package flow

package restgate

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// checkQuery refuses a query parameter that names no field the route lets
// a query set, or whose value does not parse, and returns the query with
// every name in its proto (snake_case) form and field masks in the
// transcoder's form.
func checkQuery(r *Route, raw string) (url.Values, *Error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest("query string: %v", err)
	}
	out := url.Values{}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path, f, msg := r.queryField(name)
		if msg != "" {
			return nil, badRequest("query parameter %s: %s", printable(name), msg)
		}
		vals := q[name]
		if len(vals) > 1 && !f.IsList() {
			return nil, badRequest("query parameter %s: given %d times; it takes one value", path, len(vals))
		}
		for _, v := range vals {
			if isFieldMask(f) {
				mask, e := checkMask(r, path, v)
				if e != nil {
					return nil, e
				}
				v = mask
			} else if why := checkValue(f, v); why != "" {
				return nil, badRequest("query parameter %s: %s", path, why)
			}
			out.Add(path, v)
		}
	}
	return out, nil
}

// queryField resolves a dotted query parameter name to the field it sets,
// or says why it cannot.
func (r *Route) queryField(name string) (string, protoreflect.FieldDescriptor, string) {
	if r.Body == "*" {
		return "", nil, "this route takes its request in the body and no query parameters"
	}
	m := r.Input()
	var path []string
	var f protoreflect.FieldDescriptor
	for i, part := range strings.Split(name, ".") {
		if m == nil {
			return "", nil, fmt.Sprintf("%s has no fields inside it", strings.Join(path, "."))
		}
		f = fieldByName(m, part)
		if f == nil {
			return "", nil, "no such parameter; this route takes " + r.queryNames()
		}
		path = append(path, string(f.Name()))
		if i == 0 {
			if r.bindsPath(f) {
				return "", nil, "set by the request path, not the query"
			}
			if string(f.Name()) == r.Body {
				return "", nil, "set by the request body, not the query"
			}
		}
		if f.IsMap() {
			return "", nil, "a map cannot be set from the query"
		}
		m = nil
		if f.Message() != nil && !hasTextForm(f.Message()) {
			if f.IsList() {
				return "", nil, "a list of messages cannot be set from the query"
			}
			m = f.Message()
		}
	}
	if m != nil {
		return "", nil, fmt.Sprintf("a %s; name a field inside it (%s.%s)", m.Name(), strings.Join(path, "."), m.Fields().Get(0).Name())
	}
	return strings.Join(path, "."), f, ""
}

func (r *Route) bindsPath(f protoreflect.FieldDescriptor) bool {
	for _, p := range r.PathFields() {
		if p == f {
			return true
		}
	}
	return false
}

// queryNames lists the top-level fields a query may set on this route.
func (r *Route) queryNames() string {
	fs := r.Input().Fields()
	var names []string
	for i := range fs.Len() {
		f := fs.Get(i)
		if r.bindsPath(f) || string(f.Name()) == r.Body || f.IsMap() {
			continue
		}
		names = append(names, string(f.Name()))
	}
	if len(names) == 0 {
		return "no query parameters"
	}
	return strings.Join(names, ", ")
}

func isFieldMask(f protoreflect.FieldDescriptor) bool {
	return f.Message() != nil && f.Message().FullName() == "google.protobuf.FieldMask"
}

// checkMask checks a comma-separated field mask against the message it
// masks (the route's body message, else the request) and returns it with
// lowerCamelCase paths, the form the transcoder parses. Docs and YAML use
// snake_case; both spellings are accepted.
func checkMask(r *Route, param, v string) (string, *Error) {
	target := r.BodyMessage()
	if target == nil {
		target = r.Input()
	}
	if v == "" {
		return "", nil
	}
	var out []string
	for _, p := range strings.Split(v, ",") {
		var camel []string
		m := target
		for _, part := range strings.Split(strings.TrimSpace(p), ".") {
			if m == nil {
				return "", badRequest("query parameter %s: %q names a field inside one that has none", param, p)
			}
			f := fieldByName(m, part)
			if f == nil {
				return "", badRequest("query parameter %s: %q is not a field of %s (it has %s)", param, printable(p), m.Name(), fieldNames(m))
			}
			camel = append(camel, f.JSONName())
			m = f.Message()
		}
		out = append(out, strings.Join(camel, "."))
	}
	return strings.Join(out, ","), nil
}

package restgate

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Route is one REST binding of an RPC, read from its google.api.http
// option.
type Route struct {
	Method   string // HTTP method
	Template string // as written, e.g. /api/v1/kinds/{kind}/versions/{kind_version}
	RPC      protoreflect.MethodDescriptor
	// Body is "" for a route that takes no body, "*" when the body is the
	// whole request, else the request field the body fills.
	Body     string
	segments []segment
	verb     string // the ":verb" suffix of the last segment, without ':'
}

type segment struct {
	literal string
	field   protoreflect.FieldDescriptor // set for a {variable}
}

// Input is the request message.
func (r *Route) Input() protoreflect.MessageDescriptor { return r.RPC.Input() }

// BodyMessage is the message the body decodes into, nil for a route with
// no body or one whose body field is not a message.
func (r *Route) BodyMessage() protoreflect.MessageDescriptor {
	switch r.Body {
	case "":
		return nil
	case "*":
		return r.Input()
	}
	if f := r.Input().Fields().ByName(protoreflect.Name(r.Body)); f != nil {
		return f.Message()
	}
	return nil
}

// PathFields are the request fields the path binds.
func (r *Route) PathFields() []protoreflect.FieldDescriptor {
	var out []protoreflect.FieldDescriptor
	for _, s := range r.segments {
		if s.field != nil {
			out = append(out, s.field)
		}
	}
	return out
}

// Routes lists the REST bindings of a service's methods, in declaration
// order.
func Routes(svc protoreflect.ServiceDescriptor) ([]*Route, error) {
	var out []*Route
	methods := svc.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule == nil {
			continue
		}
		for _, rl := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
			r, err := newRoute(m, rl)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.FullName(), err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// NewRoute binds a route that no google.api.http option declares (a
// stream served over plain HTTP, say) so the gate checks it the same way.
func NewRoute(method, template, body string, m protoreflect.MethodDescriptor) (*Route, error) {
	rule := &annotations.HttpRule{Body: body}
	switch method {
	case http.MethodGet:
		rule.Pattern = &annotations.HttpRule_Get{Get: template}
	case http.MethodPost:
		rule.Pattern = &annotations.HttpRule_Post{Post: template}
	default:
		return nil, fmt.Errorf("NewRoute: method %s is not supported", method)
	}
	return newRoute(m, rule)
}

func newRoute(m protoreflect.MethodDescriptor, rule *annotations.HttpRule) (*Route, error) {
	r := &Route{RPC: m, Body: rule.GetBody()}
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		r.Method, r.Template = http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		r.Method, r.Template = http.MethodPost, p.Post
	case *annotations.HttpRule_Patch:
		r.Method, r.Template = http.MethodPatch, p.Patch
	case *annotations.HttpRule_Put:
		r.Method, r.Template = http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		r.Method, r.Template = http.MethodDelete, p.Delete
	default:
		return nil, fmt.Errorf("unsupported http rule %v", rule)
	}
	tmpl := r.Template
	if i := strings.LastIndex(tmpl, ":"); i > strings.LastIndex(tmpl, "/") && !strings.HasSuffix(tmpl, "}") {
		tmpl, r.verb = tmpl[:i], tmpl[i+1:]
	}
	if !strings.HasPrefix(tmpl, "/") {
		return nil, fmt.Errorf("template %q does not start with /", r.Template)
	}
	for _, part := range strings.Split(tmpl[1:], "/") {
		if strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}") {
			name := part[1 : len(part)-1]
			f := m.Input().Fields().ByName(protoreflect.Name(name))
			if f == nil || strings.Contains(name, "=") {
				return nil, fmt.Errorf("template %q: variable %s is not a plain field of %s", r.Template, name, m.Input().Name())
			}
			r.segments = append(r.segments, segment{field: f})
			continue
		}
		r.segments = append(r.segments, segment{literal: part})
	}
	if r.Body != "" && r.Body != "*" && m.Input().Fields().ByName(protoreflect.Name(r.Body)) == nil {
		return nil, fmt.Errorf("body field %s is not a field of %s", r.Body, m.Input().Name())
	}
	return r, nil
}

// match reports whether escapedPath (as sent, percent-encoded) fits the
// route's template, with the decoded value of each path variable.
func (r *Route) match(escapedPath string) (map[protoreflect.FieldDescriptor]string, bool) {
	if !strings.HasPrefix(escapedPath, "/") {
		return nil, false
	}
	p := escapedPath[1:]
	if r.verb != "" {
		if !strings.HasSuffix(p, ":"+r.verb) {
			return nil, false
		}
		p = strings.TrimSuffix(p, ":"+r.verb)
	}
	parts := strings.Split(p, "/")
	if len(parts) != len(r.segments) {
		return nil, false
	}
	vars := map[protoreflect.FieldDescriptor]string{}
	for i, s := range r.segments {
		if s.field == nil {
			if parts[i] != s.literal {
				return nil, false
			}
			continue
		}
		v, err := url.PathUnescape(parts[i])
		if err != nil || parts[i] == "" {
			return nil, false
		}
		vars[s.field] = v
	}
	return vars, true
}

// find returns the route of method and path, and whether some route fits
// the path under another method.
func find(routes []*Route, method, escapedPath string) (*Route, map[protoreflect.FieldDescriptor]string, bool) {
	other := false
	for _, r := range routes {
		vars, ok := r.match(escapedPath)
		if !ok {
			continue
		}
		if r.Method == method {
			return r, vars, true
		}
		other = true
	}
	return nil, nil, other
}

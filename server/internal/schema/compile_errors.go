package schema

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compileViolations turns a compiler error into violations located in the
// schema document.
func compileViolations(err error, doc any, w walkResult) []Violation {
	var (
		sve       *jsonschema.SchemaValidationError
		load      *jsonschema.LoadURLError
		noPtr     *jsonschema.JSONPointerNotFoundError
		noAnchor  *jsonschema.AnchorNotFoundError
		badPtr    *jsonschema.InvalidJsonPointerError
		badRegex  *jsonschema.InvalidRegexError
		dupID     *jsonschema.DuplicateIDError
		dupAnchor *jsonschema.DuplicateAnchorError
		badID     *jsonschema.ParseIDError
		badAnchor *jsonschema.ParseAnchorError
		badURL    *jsonschema.ParseURLError
	)
	switch {
	case errors.As(err, &sve):
		var lib *jsonschema.ValidationError
		if errors.As(sve.Err, &lib) {
			ptr, _ := localPointer(sve.URL)
			at, _ := ValueAt(doc, ptr)
			if vs := violations(lib, at, ptr); len(vs) > 0 {
				return vs
			}
		}
		return []Violation{{Message: strings.ReplaceAll(sve.Err.Error(), baseURL, "")}}
	case errors.As(err, &load):
		return refViolations(w, load.URL, "points outside the schema document; only references within the document are allowed")
	case errors.As(err, &noPtr):
		return refViolations(w, noPtr.URL, "points to a location that does not exist in the document")
	case errors.As(err, &noAnchor):
		return refViolations(w, noAnchor.Reference, "names an anchor that does not exist in the document")
	case errors.As(err, &badPtr):
		return refViolations(w, badPtr.URL, "is not a valid JSON pointer")
	case errors.As(err, &badRegex):
		ptr, _ := localPointer(badRegex.URL)
		return []Violation{{Path: ptr, Message: fmt.Sprintf("invalid regular expression %q: %v", badRegex.Regex, badRegex.Err)}}
	case errors.As(err, &dupID):
		first, second := ordered(dupID.Ptr1, dupID.Ptr2)
		id := strings.TrimPrefix(dupID.ID, baseDir)
		return []Violation{{Path: second + "/$id", Message: fmt.Sprintf("$id %q is also declared at %s", id, DisplayPointer(first))}}
	case errors.As(err, &dupAnchor):
		first, second := ordered(dupAnchor.Ptr1, dupAnchor.Ptr2)
		return []Violation{{Path: second, Message: fmt.Sprintf("anchor %q is also declared at %s", dupAnchor.Anchor, DisplayPointer(first))}}
	case errors.As(err, &badID):
		ptr, _ := localPointer(badID.URL)
		return []Violation{{Path: ptr + "/$id", Message: "invalid $id"}}
	case errors.As(err, &badAnchor):
		ptr, _ := localPointer(badAnchor.URL)
		return []Violation{{Path: ptr, Message: "invalid anchor"}}
	case errors.As(err, &badURL):
		return refViolations(w, badURL.URL, "is not a valid URL reference")
	default:
		return []Violation{{Message: strings.ReplaceAll(err.Error(), baseURL, "")}}
	}
}

// ordered returns two pointers in document order, so a message about a
// duplicate always blames the later one.
func ordered(a, b string) (string, string) {
	if ComparePointers(a, b) > 0 {
		return b, a
	}
	return a, b
}

// refViolations reports a reference target the compiler could not resolve
// at the $ref (or $dynamicRef) that names it. target is the URL as the
// compiler resolved it; it is matched back to the reference as written.
func refViolations(w walkResult, target string, problem string) []Violation {
	var out []Violation
	for _, r := range w.refs {
		if refMatches(r.value, target) {
			out = append(out, Violation{Path: r.ptr, Message: fmt.Sprintf("%s %q %s", r.keyword, r.value, problem)})
		}
	}
	if len(out) == 0 {
		out = append(out, Violation{Message: fmt.Sprintf("reference %q %s", strings.TrimPrefix(target, baseURL), problem)})
	}
	return out
}

// refMatches reports whether ref, as written in the document, resolves to
// target, as resolved by the compiler against the document's base URL.
func refMatches(ref, target string) bool {
	if ref == target {
		return true
	}
	r, err := url.Parse(ref)
	if err != nil {
		return false
	}
	base, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	resolved := base.ResolveReference(r).String()
	if strings.TrimSuffix(resolved, "#") == strings.TrimSuffix(target, "#") {
		return true
	}
	// The loader is asked for whole documents, without the fragment.
	doc, _, _ := strings.Cut(resolved, "#")
	targetDoc, _, _ := strings.Cut(target, "#")
	return doc != baseURL && doc == targetDoc
}

// localPointer extracts the JSON pointer of a location in the document from
// a compiler URL such as converge:///schema.json#/properties/a.
func localPointer(u string) (string, bool) {
	doc, frag, _ := strings.Cut(u, "#")
	if doc != baseURL {
		return "", false
	}
	if p, err := url.PathUnescape(frag); err == nil {
		frag = p
	}
	return frag, true
}

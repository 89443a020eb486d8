package converge

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The server's rules for names, labels and pointers. The SDK checks them
// before sending, so a composer's mistake is a terminal failure naming the
// child or edge instead of a message the server refuses, which would break
// the stream and be re-sent after every reconnect.
var (
	kindPattern      = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)
	namePattern      = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	namespacePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	labelKeyPattern  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
)

const (
	maxKindLen        = 63
	maxKindVersion    = 32767
	maxNameLen        = 253
	maxNamespaceLen   = 63
	maxLabels         = 64
	maxLabelLen       = 253
	maxPointerLen     = 1024
	maxExprLen        = 4096
	maxFlowsPerEdge   = 32
	maxChildSpecBytes = 512 << 10
)

func checkKind(kind string) error {
	switch {
	case kind == "":
		return errors.New("kind: must not be empty")
	case len(kind) > maxKindLen:
		return fmt.Errorf("kind: %d characters, more than %d", len(kind), maxKindLen)
	case !kindPattern.MatchString(kind):
		return fmt.Errorf("kind: %q must be lower-case words of letters and digits separated by '.' or '-'", kind)
	}
	return nil
}

func checkKindVersion(v int) error {
	if v < 1 || v > maxKindVersion {
		return fmt.Errorf("kind_version: %d is not between 1 and %d", v, maxKindVersion)
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("name: must not be empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("name: %d characters, more than %d", len(name), maxNameLen)
	case !namePattern.MatchString(name):
		return fmt.Errorf("name: %q must be lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit", name)
	}
	return nil
}

func checkNamespace(ns string) error {
	switch {
	case ns == "":
		return nil
	case len(ns) > maxNamespaceLen:
		return fmt.Errorf("namespace: %d characters, more than %d", len(ns), maxNamespaceLen)
	case !namespacePattern.MatchString(ns):
		return fmt.Errorf("namespace: %q must be lower-case letters, digits or '-', starting and ending with a letter or digit", ns)
	}
	return nil
}

func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return fmt.Errorf("labels: %d labels, more than %d", len(labels), maxLabels)
	}
	// In key order, so the same labels always fail with the same message.
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		switch {
		case k == "" || len(k) > maxLabelLen:
			return fmt.Errorf("labels[%q]: key must be 1 to %d characters", k, maxLabelLen)
		case !labelKeyPattern.MatchString(k):
			return fmt.Errorf("labels[%q]: key must be letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit", k)
		case !utf8.ValidString(v):
			return fmt.Errorf("labels[%q]: value is not valid UTF-8", k)
		case utf8.RuneCountInString(v) > maxLabelLen:
			return fmt.Errorf("labels[%q]: value is %d characters, more than %d", k, utf8.RuneCountInString(v), maxLabelLen)
		}
	}
	return nil
}

// checkRef checks a reference's fields; field prefixes the messages.
func checkRef(field string, r Ref) error {
	if err := checkNamespace(r.Namespace); err != nil {
		return fmt.Errorf("%s.%w", field, err)
	}
	if err := checkKind(r.Kind); err != nil {
		return fmt.Errorf("%s.%w", field, err)
	}
	if err := checkName(r.Name); err != nil {
		return fmt.Errorf("%s.%w", field, err)
	}
	return nil
}

// checkPointer checks a JSON pointer (RFC 6901) that names a location
// below the document's root.
func checkPointer(p string) error {
	switch {
	case !utf8.ValidString(p):
		return errors.New("not valid UTF-8")
	case utf8.RuneCountInString(p) > maxPointerLen:
		return fmt.Errorf("%d characters, more than %d", utf8.RuneCountInString(p), maxPointerLen)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is not a JSON pointer: it must start with '/'", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return fmt.Errorf("%q is not a JSON pointer: '~' must be followed by 0 or 1", p)
		}
	}
	return nil
}

// describeRef renders a reference for messages: `vpc "lz-vpc-0"`, or
// `vpc "shared/lz-vpc-0"` with a namespace.
func describeRef(r Ref) string {
	name := r.Name
	if r.Namespace != "" {
		name = r.Namespace + "/" + name
	}
	return r.Kind + " " + strconv.Quote(name)
}

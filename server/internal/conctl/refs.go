package conctl

import (
	"fmt"
	"strconv"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// resourceRef names a resource on the command line: KIND/NAME.
type resourceRef struct {
	namespace, kind, name string
}

func (r resourceRef) String() string {
	return r.namespace + "/" + r.kind + "/" + r.name
}

func parseResourceRef(arg, namespace string) (resourceRef, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" || strings.Contains(name, "/") {
		return resourceRef{}, usagef("resource %q: want KIND/NAME, e.g. greeting/hello-world", arg)
	}
	return resourceRef{namespace: namespace, kind: kind, name: name}, nil
}

// kindRef names a kind on the command line: NAME/VERSION, where VERSION is
// "3" or "v3". version is 0 when the argument has none.
type kindRef struct {
	kind    string
	version int32
}

func (k kindRef) String() string {
	return kindID(k.kind, k.version)
}

func kindID(kind string, version int32) string {
	return fmt.Sprintf("%s/v%d", kind, version)
}

func parseKindRef(arg string) (kindRef, error) {
	kind, version, hasVersion := strings.Cut(arg, "/")
	if kind == "" {
		return kindRef{}, usagef("kind %q: want NAME or NAME/VERSION, e.g. greeting/v1", arg)
	}
	if !hasVersion {
		return kindRef{kind: kind}, nil
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(version, "v"), 10, 32)
	if err != nil || v < 1 {
		return kindRef{}, usagef("kind %q: the version must be a positive integer, e.g. greeting/v1", arg)
	}
	return kindRef{kind: kind, version: int32(v)}, nil
}

// refName shows a resource the way it is typed on the command line:
// KIND/NAME, or NAMESPACE/KIND/NAME when its namespace is not ns. A
// reference without a namespace is in ns.
func refName(ref *convergev1.ResourceRef, ns string) string {
	if ref == nil {
		return ""
	}
	if rns := ref.GetNamespace(); rns != "" && rns != ns {
		return rns + "/" + ref.GetKind() + "/" + ref.GetName()
	}
	return ref.GetKind() + "/" + ref.GetName()
}

// refID is a reference's full NAMESPACE/KIND/NAME, a missing namespace
// being ns.
func refID(ref *convergev1.ResourceRef, ns string) string {
	if rns := ref.GetNamespace(); rns != "" {
		ns = rns
	}
	return ns + "/" + ref.GetKind() + "/" + ref.GetName()
}

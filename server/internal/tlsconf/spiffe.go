package tlsconf

import (
	"crypto/x509"
	"fmt"
	"net/url"
	"strings"
)

// Allowlist is a set of SPIFFE IDs a caller may present: exact IDs, or
// prefixes written with a trailing "/*" ("spiffe://td/ns/prod/*" admits
// every ID under spiffe://td/ns/prod/). An empty Allowlist admits every
// caller whose certificate verified.
type Allowlist struct {
	exact    map[string]bool
	prefixes []string
}

// ParseAllowlist checks entries and builds an Allowlist. flag names the
// option the entries came from, for error messages.
func ParseAllowlist(flag string, entries []string) (Allowlist, error) {
	al := Allowlist{exact: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		id, wildcard := strings.CutSuffix(e, "/*")
		if err := checkID(id); err != nil {
			return Allowlist{}, fmt.Errorf("%s: %q: %w", flag, e, err)
		}
		if wildcard {
			al.prefixes = append(al.prefixes, id+"/")
		} else {
			al.exact[id] = true
		}
	}
	return al, nil
}

// Empty reports whether the list admits every verified caller.
func (al Allowlist) Empty() bool { return len(al.exact) == 0 && len(al.prefixes) == 0 }

// Allows reports whether id is on the list. The empty id (no SPIFFE ID) is
// allowed only by an empty list.
func (al Allowlist) Allows(id string) bool {
	if al.Empty() {
		return true
	}
	if id == "" {
		return false
	}
	if al.exact[id] {
		return true
	}
	for _, p := range al.prefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// checkID accepts spiffe://<trust-domain>[/<path>] without query, fragment,
// user info or port, as the SPIFFE ID specification requires.
func checkID(id string) error {
	u, err := url.Parse(id)
	if err != nil {
		return fmt.Errorf("not a URI: %w", err)
	}
	switch {
	case u.Scheme != "spiffe":
		return fmt.Errorf("scheme must be spiffe (spiffe://trust-domain/path)")
	case u.Host == "" || u.Port() != "":
		return fmt.Errorf("trust domain is missing or has a port")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("must not have user info, query or fragment")
	case strings.HasSuffix(u.Path, "/"):
		return fmt.Errorf("path must not end with /")
	}
	return nil
}

// SPIFFEID is the SPIFFE ID in cert's URI SANs, or "" if it has none. A
// certificate with more than one spiffe:// URI is invalid under the SPIFFE
// specification and yields "".
func SPIFFEID(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	id := ""
	for _, u := range cert.URIs {
		if u.Scheme != "spiffe" {
			continue
		}
		if id != "" {
			return ""
		}
		id = u.String()
	}
	if checkID(id) != nil {
		return ""
	}
	return id
}

// Matches reports whether id matches one of patterns, each an exact ID or
// a prefix written with a trailing "/*", as in a kind manifest's workers
// list. Unlike ParseAllowlist it does not check the patterns, and an
// empty id matches nothing.
func Matches(patterns []string, id string) bool {
	if id == "" {
		return false
	}
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "/*"); ok {
			if strings.HasPrefix(id, prefix+"/") {
				return true
			}
		} else if p == id {
			return true
		}
	}
	return false
}

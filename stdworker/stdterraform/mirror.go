package stdterraform

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// MirrorDir is where an unpacked filesystem mirror holds the binding's
// provider version for this platform:
// <mirror>/<host>/<namespace>/<name>/<version>/<os>_<arch>.
func (b Binding) MirrorDir(mirror string) string {
	return filepath.Join(mirror, filepath.FromSlash(QualifiedSource(b.Source)), b.Version, runtime.GOOS+"_"+runtime.GOARCH)
}

// DefaultRegistry is the host of a provider source address that names
// none, as terraform reads one.
const DefaultRegistry = "registry.terraform.io"

// QualifiedSource returns a provider source address with its registry
// host. Every configuration stdterraform writes names the host, so that
// terraform and OpenTofu (whose default host is its own registry) look
// for the same provider, in a filesystem mirror and in a registry alike.
func QualifiedSource(source string) string {
	if strings.Count(source, "/") == 1 {
		return DefaultRegistry + "/" + source
	}
	return source
}

// mirrorPath finds the path of each filesystem_mirror block in a
// terraform CLI configuration. It reads the file as text, not as HCL: it
// only adds the directories searched to the message of a failed init.
var mirrorPath = regexp.MustCompile(`filesystem_mirror\s*\{[^}]*?path\s*=\s*"([^"]*)"`)

// mirrorsSearched says where terraform looked for b's provider in the
// filesystem mirrors the CLI configuration file names; "" when it names
// none (or cannot be read).
func mirrorsSearched(cliConfig string, b *Binding) string {
	raw, err := os.ReadFile(cliConfig)
	if err != nil {
		return ""
	}
	var dirs []string
	for _, m := range mirrorPath.FindAllStringSubmatch(string(raw), -1) {
		dirs = append(dirs, b.MirrorDir(m[1]))
	}
	if len(dirs) == 0 {
		return ""
	}
	return "; the provider was looked for in the filesystem mirror at " + strings.Join(dirs, ", ") + " (" + cliConfig + ")"
}

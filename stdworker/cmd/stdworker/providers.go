package main

import (
	"github.com/convergehq/converge/stdworker/provider"
	"github.com/convergehq/converge/stdworker/stdcel"
	"github.com/convergehq/converge/stdworker/stdio"
	"github.com/convergehq/converge/stdworker/stdshell"
	"github.com/convergehq/converge/stdworker/stdstarlark"
	"github.com/convergehq/converge/stdworker/stdterraform"
)

// providers returns every provider this binary has, by name. baseDir is the
// configuration file's directory, against which settings' relative paths
// are resolved.
func providers(baseDir string) map[string]provider.Provider {
	all := []provider.Provider{
		stdio.New(stdio.WithBaseDir(baseDir)),
		stdshell.New(),
		stdterraform.New(),
		stdcel.New(),
		stdstarlark.New(stdstarlark.WithBaseDir(baseDir)),
	}
	out := make(map[string]provider.Provider, len(all))
	for _, p := range all {
		out[p.Name()] = p
	}
	return out
}

// stdKind is a std kind version and the provider that serves it.
type stdKind struct {
	kind     string
	version  int
	provider string
}

// stdKinds are the kinds stdworker serves with no configuration file, when
// the server has them (catalog/std).
var stdKinds = []stdKind{
	{kind: stdshell.Kind, version: stdshell.Version, provider: stdshell.Name},
	{kind: "std.terraform", version: 1, provider: stdterraform.Name},
	{kind: stdcel.Kind, version: stdcel.Version, provider: stdcel.Name},
}

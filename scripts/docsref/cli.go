package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// command is one binary whose cobra tree becomes a reference page.
type command struct {
	name  string // binary and page name
	pkg   string // Go package that builds it, relative to the root
	title string // page heading
	intro string // one paragraph above the commands
}

var commands = []command{
	{
		name: "conctl", pkg: "./server/cmd/conctl", title: "conctl reference",
		intro: "`conctl` is the command-line client of the control API. Every command below is " +
			"`conctl help COMMAND` as the binary prints it; the flags under Global Flags work with every command.",
	},
	{
		name: "converge", pkg: "./server/cmd/converge", title: "converge reference",
		intro: "`converge` is the server binary: `serve` (production), `dev` (a throwaway local setup) " +
			"and `migrate`, plus `pg-bin` (where the PostgreSQL server binaries are). See [Running Converge](../operations.md) for how the flags fit together.",
	},
	{
		name: "stdworker", pkg: "./stdworker/cmd/stdworker", title: "stdworker reference",
		intro: "`stdworker` serves kinds with no SDK: programs, shell scripts, Terraform modules, CEL " +
			"graphs and Starlark composers. See [stdworker](../stdworker.md) for a walk-through.",
	},
}

// maxDepth bounds the walk; cobra trees here are three levels deep.
const maxDepth = 6

// skipped are cobra's own commands, the same in every binary.
var skipped = map[string]bool{"help": true, "completion": true}

func buildCommand(root, bin, pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), pkg)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return filepath.Join(bin, filepath.Base(pkg)), nil
}

// cliPage walks the binary's command tree depth first, in the order its
// help lists the subcommands, and renders each command's help verbatim.
func cliPage(c command, exe string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s# %s\n\n%s\n\n", generatedNote, c.title, c.intro)
	var walk func(path []string) error
	walk = func(path []string) error {
		if len(path) > maxDepth {
			return fmt.Errorf("%s %s: commands nested deeper than %d; is a command listing itself?", c.name, strings.Join(path, " "), maxDepth)
		}
		text, err := help(exe, path)
		if err != nil {
			return err
		}
		full := strings.Join(append([]string{c.name}, path...), " ")
		level := min(len(path)+2, 4)
		fence := "```"
		for strings.Contains(text, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "%s %s\n\n%stext\n%s\n%s\n\n", strings.Repeat("#", level), full, fence, strings.TrimRight(text, "\n"), fence)
		for _, sub := range subcommands(text, c.name, len(path)) {
			if err := walk(append(append([]string{}, path...), sub)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// help runs `exe help PATH...` with no CONVERGE_* variables, so defaults
// that read the environment print the same everywhere.
func help(exe string, path []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, append([]string{"help"}, path...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONVERGE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "NO_COLOR=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s help %s: %w\n%s", filepath.Base(exe), strings.Join(path, " "), err, errOut.String())
	}
	if out.Len() == 0 {
		return errOut.String(), nil
	}
	return out.String(), nil
}

// subcommands reads the names under "Available Commands:" and "Additional
// help topics:" of a cobra help text. Commands are listed by name alone,
// topics by their full path ("conctl catalog"), whose depth+1'th word is the
// name. Names are padded to a common width, so the longest is followed by
// one space only: split on words, not on the gap.
func subcommands(text, binary string, depth int) []string {
	var names []string
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "Available Commands:" || line == "Additional help topics:" {
			section = line
			continue
		}
		if section == "" || !strings.HasPrefix(line, "  ") {
			section = ""
			continue
		}
		words := strings.Fields(line)
		name := words[0]
		if section == "Additional help topics:" {
			if words[0] != binary || len(words) <= depth+1 {
				continue
			}
			name = words[depth+1]
		}
		if !skipped[name] && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

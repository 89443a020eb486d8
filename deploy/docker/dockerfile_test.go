// Package docker_test checks the Dockerfiles without a container builder: the paths they copy
// exist and cover every package the binary needs, the runtime stage is non-root, and the exact
// go build command they run compiles a working binary.
package docker_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction with continuation lines joined.
type instruction struct {
	op   string
	args string
}

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{op: strings.ToUpper(op), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

// repoRoot is the build context: the directory holding go.mod above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no go.mod above %s", dir)
		}
		dir = parent
	}
}

// shellWords splits a simple shell command line, honouring double quotes and expanding
// ${NAME} from vars.
func shellWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted, inWord = !quoted, true
		case c == '$' && i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ${ in %q", s)
			}
			name := s[i+2 : i+end]
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("undefined variable %s in %q", name, s)
			}
			cur.WriteString(v)
			inWord = true
			i += end
		case (c == ' ' || c == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// goBuild finds the RUN instruction that runs go build and splits it into its environment,
// its flags and the package it builds.
func goBuild(t *testing.T, ins []instruction) (env, flags []string, out, pkg string) {
	t.Helper()
	for _, in := range ins {
		if in.op != "RUN" || !strings.Contains(in.args, "go build") {
			continue
		}
		words, err := shellWords(in.args, map[string]string{"VERSION": "test"})
		if err != nil {
			t.Fatalf("RUN %s: %v", in.args, err)
		}
		i := 0
		for ; i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-"); i++ {
			env = append(env, words[i])
		}
		if i+1 >= len(words) || words[i] != "go" || words[i+1] != "build" {
			t.Fatalf("RUN %s: want [VAR=value ...] go build ...", in.args)
		}
		rest := words[i+2:]
		if len(rest) == 0 || strings.HasPrefix(rest[len(rest)-1], "-") {
			t.Fatalf("RUN %s: go build names no package last", in.args)
		}
		pkg = rest[len(rest)-1]
		for j := 0; j < len(rest)-1; j++ {
			if rest[j] == "-o" && j+1 < len(rest)-1 {
				j++
				out = rest[j]
				continue
			}
			flags = append(flags, rest[j])
		}
		return env, flags, out, pkg
	}
	t.Fatalf("no RUN ... go build in the Dockerfile")
	return nil, nil, "", ""
}

func goDirective(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("go.mod has no go directive")
	return ""
}

package stdstarlark

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Limits on a bundle.
const (
	// maxFileBytes bounds one .star file.
	maxFileBytes = 1 << 20
	// maxModules bounds the files one run loads.
	maxModules = 256
	// maxCachedPrograms bounds the compiled-program cache of one kind.
	maxCachedPrograms = 512
)

// fileOptions are the Starlark dialect of bundles: while loops, sets and
// top-level control flow are allowed (the step limit bounds them);
// recursion is not.
var fileOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true}

// programs caches compiled files by name and content, so a bundle is parsed
// once however many tasks run it, and an edited file is compiled afresh.
type programs struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]*starlark.Program
}

// compile returns the compiled program of file name with content src.
func (p *programs) compile(name string, src []byte) (*starlark.Program, error) {
	key := sha256.Sum256(append([]byte(name+"\x00"), src...))
	p.mu.Lock()
	prog, ok := p.m[key]
	p.mu.Unlock()
	if ok {
		return prog, nil
	}
	_, prog, err := starlark.SourceProgramOptions(fileOptions, name, src, isPredeclared)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil || len(p.m) >= maxCachedPrograms {
		p.m = map[[sha256.Size]byte]*starlark.Program{}
	}
	p.m[key] = prog
	return prog, nil
}

// isPredeclared reports the names a bundle's files may use besides
// Starlark's universe.
func isPredeclared(name string) bool { _, ok := predeclared[name]; return ok }

// loader executes a bundle's files for one run: it reads them through files
// (an os.Root's FS when serving, so nothing outside the bundle directory can
// be read, symbolic links included), gives each module's globals to every
// load() of it, and refuses cycles.
type loader struct {
	files    fs.FS
	programs *programs
	modules  map[string]*module
}

// module is one loaded file: its globals once executed, or the error.
type module struct {
	globals starlark.StringDict
	err     error
	loading bool
}

// exec runs the file name (a clean path inside the bundle) on thread and
// returns its globals.
func (l *loader) exec(thread *starlark.Thread, name string) (starlark.StringDict, error) {
	if m, ok := l.modules[name]; ok {
		if m.loading {
			return nil, fmt.Errorf("load cycle: %s is already being loaded", name)
		}
		return m.globals, m.err
	}
	if len(l.modules) >= maxModules {
		return nil, fmt.Errorf("more than %d files loaded", maxModules)
	}
	m := &module{loading: true}
	l.modules[name] = m
	m.globals, m.err = l.execFile(thread, name)
	m.loading = false
	return m.globals, m.err
}

func (l *loader) execFile(thread *starlark.Thread, name string) (starlark.StringDict, error) {
	src, err := l.read(name)
	if err != nil {
		return nil, err
	}
	prog, err := l.programs.compile(name, src)
	if err != nil {
		return nil, err
	}
	globals, err := prog.Init(thread, predeclared)
	if err != nil {
		return nil, err
	}
	globals.Freeze()
	return globals, nil
}

// read returns a file of the bundle, bounded.
func (l *loader) read(name string) ([]byte, error) {
	f, err := l.files.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file in the bundle", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(src) > maxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, maxFileBytes)
	}
	return src, nil
}

// load implements Thread.Load: module names are paths of .star files,
// relative to the bundle's root, or to the loading file when they start
// with "./" or "../"; none may leave the bundle.
func (l *loader) load(thread *starlark.Thread, name string) (starlark.StringDict, error) {
	from := ""
	if thread.CallStackDepth() > 0 {
		from = thread.CallFrame(0).Pos.Filename()
	}
	resolved, err := resolveModule(from, name)
	if err != nil {
		return nil, err
	}
	return l.exec(thread, resolved)
}

// resolveModule turns a load() argument in file from into a clean path
// inside the bundle.
func resolveModule(from, name string) (string, error) {
	if !strings.HasSuffix(name, ".star") {
		return "", fmt.Errorf("%q: a module is a .star file of the bundle", name)
	}
	p := name
	if strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") {
		p = path.Join(path.Dir(from), name)
	}
	p = path.Clean(p)
	if path.IsAbs(name) || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, '\\') {
		return "", fmt.Errorf("%q: outside the bundle", name)
	}
	return p, nil
}

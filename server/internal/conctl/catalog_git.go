package conctl

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing/fstest"
)

// maxBaseBytes bounds what --base reads from git.
const maxBaseBytes = 256 << 20

// gitTree reads the files under dir as they are at the git ref, into a
// file system rooted at dir.
func gitTree(ctx context.Context, dir, ref string) (fstest.MapFS, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return nil, usagef("--base: %q is not a git ref", ref)
	}
	top, err := git(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("--base: %s is not in a git work tree: %w", dir, err)
	}
	prefix, err := git(ctx, dir, nil, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("--base: %w", err)
	}
	commit, err := git(ctx, dir, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", ref+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--base: %q is not a commit, branch or tag of this repository", ref)
	}
	root := strings.TrimSpace(string(top))
	pre := strings.TrimSpace(string(prefix))
	args := []string{"ls-tree", "-r", "-z", "--full-tree", strings.TrimSpace(string(commit))}
	if pre != "" {
		args = append(args, "--", pre)
	}
	list, err := git(ctx, root, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", ref, err)
	}
	var names, oids []string
	for _, entry := range bytes.Split(list, []byte{0}) {
		// "<mode> <type> <object>\t<path>"
		meta, name, ok := strings.Cut(string(entry), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 || fields[1] != "blob" || fields[0] == "120000" {
			continue // not a regular file: symbolic links and submodules are skipped
		}
		names = append(names, strings.TrimPrefix(name, pre))
		oids = append(oids, fields[2])
	}
	files := fstest.MapFS{}
	if len(oids) == 0 {
		return files, nil
	}
	out, err := git(ctx, root, strings.NewReader(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("--base %s: %w", ref, err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for i, name := range names {
		data, err := readBlob(r, oids[i])
		if err != nil {
			return nil, fmt.Errorf("--base %s: %s: %w", ref, name, err)
		}
		files[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return files, nil
}

// readBlob reads one "<oid> blob <size>\n<content>\n" answer of git
// cat-file --batch.
func readBlob(r *bufio.Reader, oid string) ([]byte, error) {
	header, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("reading git cat-file: %w", err)
	}
	fields := strings.Fields(header)
	if len(fields) != 3 || fields[0] != oid || fields[1] != "blob" {
		return nil, fmt.Errorf("unexpected git cat-file answer %q", strings.TrimSpace(header))
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil || size < 0 {
		return nil, fmt.Errorf("unexpected git cat-file answer %q", strings.TrimSpace(header))
	}
	data := make([]byte, size+1)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("reading git cat-file: %w", err)
	}
	return data[:size], nil
}

// git runs git in dir and returns its standard output, bounded; its error
// carries git's own message.
func git(ctx context.Context, dir string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = stdin
	var out limitedBuffer
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if out.over {
		return nil, fmt.Errorf("git %s: more than %d bytes", args[0], maxBaseBytes)
	}
	if err != nil {
		var ee *exec.ExitError
		if msg := strings.TrimSpace(errOut.String()); errors.As(err, &ee) && msg != "" {
			return nil, fmt.Errorf("git %s: %s", args[0], msg)
		}
		return nil, fmt.Errorf("git %s: %w", args[0], err)
	}
	return out.Bytes(), nil
}

// limitedBuffer keeps the first maxBaseBytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxBaseBytes {
		b.over = true
		return 0, errors.New("output too large")
	}
	return b.Buffer.Write(p)
}

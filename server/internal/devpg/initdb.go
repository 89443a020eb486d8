package devpg

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// initdb creates the data directory, preferring the C.UTF-8 locale and
// falling back to C on systems that lack it.
func (c *Cluster) initdb(ctx context.Context) error {
	out, err := c.runInitdb(ctx, "C.UTF-8")
	if err != nil && strings.Contains(out, "locale") && ctx.Err() == nil {
		_ = os.RemoveAll(c.dataDir())
		out, err = c.runInitdb(ctx, "C")
	}
	if err != nil {
		return fmt.Errorf("devpg: initdb -D %s: %w; output:\n%s", c.dataDir(), err, lastBytes(out))
	}
	return nil
}

func (c *Cluster) runInitdb(ctx context.Context, locale string) (string, error) {
	args := []string{"-D", c.dataDir(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=" + locale}
	if !c.opts.Durable {
		args = append(args, "--no-sync")
	}
	return c.runTool(ctx, filepath.Join(c.bin, "initdb"), args)
}

// runTool runs one of PostgreSQL's programs as the cluster's owner, in
// its directory, and returns what it printed.
func (c *Cluster) runTool(ctx context.Context, path string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = sysProcAttr(c.owner)
	p, err := launch(cmd)
	if err != nil {
		return "", err
	}
	<-p.done
	return out.String(), p.err
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }

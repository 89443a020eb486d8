package devpg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// StartStandby starts a hot standby of primary: a new cluster directory
// whose data directory pg_basebackup copies from primary with -R, which
// writes standby.signal and primary_conninfo so the server starts in
// recovery and streams the primary's WAL from then on. It accepts
// read-only connections once it has replayed to a consistent state.
// Stop, Kill and Restart work as on any cluster; a standby that is
// killed and restarted resumes streaming where it left off.
//
// The primary must allow replication connections, which a devpg cluster
// does (wal_level replica and max_wal_senders are PostgreSQL's defaults,
// and initdb's pg_hba.conf trusts local replication connections).
// opts.BinDir, Durable, Settings, InMemory, Log and StartTimeout apply to
// the standby as to any cluster; hot_standby is always on.
func StartStandby(ctx context.Context, primary *Cluster, opts Options) (*Cluster, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.BinDir == "" {
		opts.BinDir = primary.bin
	}
	bin, err := opts.binDir()
	if err != nil {
		return nil, err
	}
	backup, err := baseBackupPath(bin)
	if err != nil {
		return nil, err
	}
	settings := map[string]string{"hot_standby": "on"}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	opts.Settings = settings
	parent := os.TempDir()
	if mem := memDir(); opts.InMemory && mem != "" {
		parent = mem
	}
	dir, err := os.MkdirTemp(parent, dirPattern)
	if err != nil {
		return nil, fmt.Errorf("devpg: create standby directory: %w", err)
	}
	c := &Cluster{opts: opts, bin: bin, dir: dir, owner: primary.owner}
	if opts.Log == nil {
		c.logPath = filepath.Join(dir, "postgres.log")
	}
	if err := c.createStandby(ctx, backup, primary.Port()); err != nil {
		if !opts.Keep {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) createStandby(ctx context.Context, backup string, primaryPort int) error {
	if err := writePidFile(c.dir, os.Getpid(), 0); err != nil {
		return err
	}
	if err := chown(c.dir, c.owner); err != nil {
		return err
	}
	if out, err := c.baseBackup(ctx, backup, primaryPort); err != nil {
		return fmt.Errorf("devpg: pg_basebackup from port %d: %w; output:\n%s", primaryPort, err, lastBytes(out))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startServer(ctx, c.opts.Port)
}

// baseBackup copies the primary's data directory into c's, streaming the
// WAL written meanwhile (-X stream), and writes the standby configuration
// (-R). A checkpoint is forced fast so the copy starts at once.
func (c *Cluster) baseBackup(ctx context.Context, backup string, primaryPort int) (string, error) {
	args := []string{"-D", c.dataDir(), "-h", "127.0.0.1", "-p", strconv.Itoa(primaryPort), "-U", "postgres",
		"-X", "stream", "-R", "-c", "fast", "--no-password"}
	if !c.opts.Durable {
		args = append(args, "--no-sync")
	}
	return c.runTool(ctx, backup, args)
}

// baseBackupPath finds pg_basebackup beside postgres: in bin, or in the
// directory postgres links to (distributions link the server binaries,
// but not the client tools, into a directory on PATH).
func baseBackupPath(bin string) (string, error) {
	dirs := []string{bin}
	if real, err := filepath.EvalSymlinks(filepath.Join(bin, "postgres")); err == nil {
		dirs = append(dirs, filepath.Dir(real))
	}
	for _, d := range dirs {
		if p := filepath.Join(d, "pg_basebackup"); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("devpg: StartStandby: %w: pg_basebackup is missing from %v (it comes with the PostgreSQL client package)",
		ErrNoBinaries, dirs)
}

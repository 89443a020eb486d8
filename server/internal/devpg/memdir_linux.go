package devpg

import (
	"os"
	"syscall"
)

// tmpfsMagic is the file system type of tmpfs in statfs(2).
const tmpfsMagic = 0x01021994

// minMemFree is the free space a memory file system needs before a
// cluster goes there: room for the cluster, its WAL and test databases.
const minMemFree = 2 << 30

// memDir returns a memory-backed directory with room for a cluster, or ""
// if there is none. Containers often give /dev/shm only 64 MiB, hence
// the size check.
func memDir() string {
	const dir = "/dev/shm"
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Type != tmpfsMagic {
		return ""
	}
	if free := uint64(fs.Bavail) * uint64(fs.Bsize); free < minMemFree {
		return ""
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o003 != 0o003 {
		return "" // the postgres user could not enter or write it
	}
	return dir
}

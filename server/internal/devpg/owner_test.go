package devpg

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/testkit"
)

// TestServerDiesWithOwner runs this test binary as a separate owner
// process with helperEnv set; TestMain then runs ownerHelper instead of
// the tests.
const helperEnv = "DEVPG_TEST_OWNER_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		ownerHelper()
		return
	}
	os.Exit(m.Run())
}

// ownerHelper starts a cluster, reports it on stdout and waits to be
// killed.
func ownerHelper() {
	c, err := Start(context.Background(), Options{})
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	// Goroutines that end while locked to a thread destroy that thread.
	// The server must survive them: only the owner's death may end it.
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() { runtime.LockOSThread() })
	}
	wg.Wait()
	conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
	if err != nil {
		fmt.Printf("error server gone after thread churn: %v\n", err)
		os.Exit(1)
	}
	_ = conn.Close(context.Background())
	_, serverPID, _ := readPidFile(c.Dir())
	fmt.Printf("cluster %s %d\n", c.Dir(), serverPID)
	select {}
}

func TestServerDiesWithOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal that ends an orphaned server is Linux-only")
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	var dir string
	var serverPID int
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if _, err := fmt.Sscanf(lines.Text(), "cluster %s %d", &dir, &serverPID); err == nil {
			break
		}
		if strings.HasPrefix(lines.Text(), "error ") {
			t.Fatalf("helper: %s", lines.Text())
		}
	}
	if serverPID == 0 {
		t.Fatalf("helper reported no cluster (scan error %v)", lines.Err())
	}
	if !processAlive(serverPID) {
		t.Fatalf("server %d not running while its owner lives", serverPID)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	testkit.EventuallyWithin(t, 20*time.Second, fmt.Sprintf("server %d to end after its owner was killed", serverPID),
		func() bool { return !processAlive(serverPID) })

	// The abandoned directory is what the next Start's sweep removes.
	sweepStale(filepath.Dir(dir))
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("sweep left the abandoned directory %s: %v", dir, err)
	}
}

package jail_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// The init is a fork of the supervisor, but in a static binary (the CLI)
// it leaves the supervisor's heap out of its copy (tj_init_start): what the
// supervisor holds in memory is not in the jail's PID 1. Checked from the
// host: a marker the test keeps in its Go heap is not in the init's memory,
// while the plan (the command line) is, so the search itself works. In a
// dynamically linked test binary the init has a copy of everything: the
// test checks that the run works and says so. Root only: nothing else may
// read the memory of the non-dumpable init. `make unit` runs it both ways.
func TestInitLeavesSupervisorHeapOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading the init's memory needs root")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh here")
	}
	secret := []byte("tj-heap-" + nonce(t)) // Go heap only
	planned := "tj-plan-" + nonce(t)        // in the plan: the init must have it
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := p.Spec(profiles.Request{Args: []string{"/bin/sh", "-c", "read x; exit 0 # " + planned}, Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmd := jail.Command(spec)
	stdin, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd.Stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		w.Close()
		if res, err := cmd.Wait(); err != nil || res.ExitCode != 0 {
			t.Errorf("the run: %+v, %v", res, err)
		}
	}()
	pid := jail.InitPID(cmd)
	if !memoryHas(t, pid, []byte(planned)) {
		t.Fatalf("the plan's marker is not in the init's memory: the search does not work")
	}
	switch has := memoryHas(t, pid, secret); {
	case !static():
		t.Logf("dynamically linked: the init has a copy of the whole supervisor (heap marker found: %v)", has)
	case has:
		t.Errorf("the init's memory holds the supervisor's heap (marker %q found in pid %d)", secret, pid)
	}
	runtime.KeepAlive(secret)
}

// static says whether this binary has no program interpreter (AT_BASE 0).
func static() bool {
	auxv, err := unix.Auxv()
	if err != nil {
		return false
	}
	for _, kv := range auxv {
		if kv[0] == 7 { // AT_BASE: x/sys/unix has no name for it
			return kv[1] == 0
		}
	}
	return true
}

func nonce(t *testing.T) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// memoryHas searches every readable mapping of pid for needle.
func memoryHas(t *testing.T, pid int, needle []byte) bool {
	t.Helper()
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer maps.Close()
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	s := bufio.NewScanner(maps)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 || f[1][0] != 'r' || (len(f) > 5 && f[5] == "[vvar]") {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b-a > 1<<30 {
			continue
		}
		buf := make([]byte, b-a)
		n, err := mem.ReadAt(buf, int64(a))
		if err != nil && n == 0 && err != syscall.EIO {
			continue
		}
		if bytes.Contains(buf[:n], needle) {
			return true
		}
	}
	return false
}

// Runs started at once from one process each fork with their own plan
// and stack: one fork's marks must not leave out another's (tj_init_start
// forks one at a time). Every run must work.
func TestConcurrentStarts(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("no /bin/true here")
	}
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range runRound(p, t.TempDir(), 8, 4) {
		t.Error(err)
	}
}

package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/seccomp"
)

// Filters are loaded for good, so every kernel test runs in a re-executed
// child of the test binary: TJLOOP_TEST_CHILD=probe loads TJLOOP_FILTER
// (with -nocache when TJLOOP_NOCACHE is set) and reports what two calls
// return; TJLOOP_TEST_CHILD=main runs main with TJLOOP_ARGS.
func TestMain(m *testing.M) {
	switch os.Getenv("TJLOOP_TEST_CHILD") {
	case "probe":
		probe()
		return
	case "main":
		os.Args = append([]string{"tjloop"}, strings.Fields(os.Getenv("TJLOOP_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// probe prints "getppid R ERRNO reboot ERRNO". reboot with no magic
// numbers is harmless: the kernel refuses it (EINVAL for root, EPERM
// otherwise) unless a filter answers first.
func probe() {
	runtime.LockOSThread()
	if spec := os.Getenv("TJLOOP_FILTER"); spec != "" {
		prog, err := loadFilter(spec, os.Getenv("TJLOOP_NOCACHE") != "")
		if err == nil {
			err = install(prog)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	r, _, e1 := unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	_, _, e2 := unix.RawSyscall6(unix.SYS_REBOOT, 0, 0, 0, 0, 0, 0)
	fmt.Printf("getppid %d %d reboot %d\n", int(r), int(e1), int(e2))
}

type probeResult struct {
	ppid                 int
	getppidErr, rebootEr unix.Errno
}

func runProbe(t *testing.T, filter string, nocache bool) probeResult {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TJLOOP_TEST_CHILD=probe", "TJLOOP_FILTER="+filter)
	if nocache {
		cmd.Env = append(cmd.Env, "TJLOOP_NOCACHE=1")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe with filter %q nocache %v: %v: %s", filter, nocache, err, stderrOf(err))
	}
	var p probeResult
	var e1, e2 int
	if _, err := fmt.Sscanf(string(out), "getppid %d %d reboot %d", &p.ppid, &e1, &e2); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	p.getppidErr, p.rebootEr = unix.Errno(e1), unix.Errno(e2)
	return p
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func encode(prog []unix.SockFilter) []byte {
	var b []byte
	for _, in := range prog {
		b = binary.NativeEndian.AppendUint16(b, in.Code)
		b = append(b, in.Jt, in.Jf)
		b = binary.NativeEndian.AppendUint32(b, in.K)
	}
	return b
}

// denyGetppid fails getppid with EPERM and allows everything else: a
// filter whose effect the probe can see.
var denyGetppid = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // nr
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_GETPPID, Jt: 0, Jf: 1},
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
	{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
}

func TestDecodeFilter(t *testing.T) {
	got, err := decodeFilter(encode(denyGetppid))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(denyGetppid) {
		t.Errorf("decode(encode(p)) = %v, want %v", got, denyGetppid)
	}
	for _, b := range [][]byte{nil, make([]byte, 12), make([]byte, 8*(unix.BPF_MAXINSNS+1))} {
		if _, err := decodeFilter(b); err == nil {
			t.Errorf("decodeFilter accepted %d bytes", len(b))
		}
	}
}

func TestDefeatCache(t *testing.T) {
	got, err := defeatCache(denyGetppid)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(denyGetppid)+1 || got[0].Code != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || got[0].K != offArg0 ||
		fmt.Sprint(got[1:]) != fmt.Sprint(denyGetppid) {
		t.Errorf("defeatCache = %v, want a load of args[0] and then the program unchanged", got)
	}
	if _, err := defeatCache(allowAll()); err != nil {
		t.Errorf("a program that starts with a constant return: %v", err)
	}
	// "A -> X, then compare X": the prefix would change its result.
	readsA := []unix.SockFilter{{Code: unix.BPF_MISC | unix.BPF_TAX}, {Code: unix.BPF_RET | unix.BPF_K}}
	if _, err := defeatCache(readsA); err == nil {
		t.Error("defeatCache accepted a program whose first instruction reads the accumulator")
	}
	if _, err := defeatCache(nil); err == nil {
		t.Error("defeatCache accepted an empty program")
	}
}

// The filters tjloop loads do what they say in the kernel, with and
// without the cache-defeating prefix: allow-all changes nothing, a filter
// file is obeyed, and tooljail's own program (the seccomp package's
// output, as tjbench writes it) allows getppid and denies reboot.
func TestInstall(t *testing.T) {
	dir := t.TempDir()
	deny := filepath.Join(dir, "deny-getppid.bpf")
	if err := os.WriteFile(deny, encode(denyGetppid), 0o644); err != nil {
		t.Fatal(err)
	}
	prog, err := (&seccomp.Compiler{}).Compile(seccomp.Policy{}, false)
	if err != nil {
		t.Fatal(err)
	}
	tj := filepath.Join(dir, "tooljail.bpf")
	if err := os.WriteFile(tj, prog.Filter, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range seccomp.Groups()["@default"] {
		for _, n := range seccomp.Groups()[name] {
			if n == "reboot" {
				t.Fatal("the default allowlist allows reboot; pick another denied call for this test")
			}
		}
	}

	base := runProbe(t, "", false)
	if base.ppid != os.Getpid() || base.getppidErr != 0 {
		t.Fatalf("without a filter getppid = %d, %v; want %d", base.ppid, base.getppidErr, os.Getpid())
	}
	for _, nocache := range []bool{false, true} {
		if p := runProbe(t, "allow-all", nocache); p != base {
			t.Errorf("allow-all (nocache %v): %+v, want %+v as without a filter", nocache, p, base)
		}
		p := runProbe(t, deny, nocache)
		if p.getppidErr != unix.EPERM || p.rebootEr != base.rebootEr {
			t.Errorf("deny-getppid file (nocache %v): getppid %v, reboot %v; want EPERM and %v", nocache, p.getppidErr, p.rebootEr, base.rebootEr)
		}
		p = runProbe(t, tj, nocache)
		if p.ppid != os.Getpid() || p.getppidErr != 0 || p.rebootEr != unix.EPERM {
			t.Errorf("tooljail's filter (nocache %v): getppid %d %v, reboot %v; want %d, no error, EPERM", nocache, p.ppid, p.getppidErr, p.rebootEr, os.Getpid())
		}
	}
	if base.rebootEr == unix.EPERM {
		t.Log("reboot fails with EPERM without a filter too (not root): the denial above is not told apart")
	}
}

func runMain(t *testing.T, args string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TJLOOP_TEST_CHILD=main", "TJLOOP_ARGS="+args)
	out, err := cmd.Output()
	return string(out), err
}

func TestMainFlags(t *testing.T) {
	line := regexp.MustCompile(`^ns \d+ cpu_ns \d+\n$`)
	for _, args := range []string{"getppid 1000", "-filter allow-all getppid 1000", "-filter allow-all -nocache fstat 1000"} {
		out, err := runMain(t, args)
		if err != nil || !line.MatchString(out) {
			t.Errorf("tjloop %s: %q, %v (%s)", args, out, err, stderrOf(err))
		}
	}
	for _, args := range []string{"-nocache getppid 10", "getppid", "read 10", "getppid -1", "-filter /nonexistent getppid 10"} {
		if out, err := runMain(t, args); err == nil {
			t.Errorf("tjloop %s succeeded: %q", args, out)
		}
	}
}

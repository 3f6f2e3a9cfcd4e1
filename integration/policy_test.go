package integration

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// The seccomp policy, seen from inside the jail: each denied call made by
// tjsys (./tjsys) fails with EPERM and is reported by name; with
// --on-violation kill the run ends as a violation; non-native entry points
// kill the run as "arch"; profiles can lift a group; unknown names are
// refused.

// ptViolation is one entry of the report's violations.
type ptViolation struct {
	Kind    string   `json:"kind"`
	Syscall string   `json:"syscall"`
	Args    []string `json:"args"`
	Path    string   `json:"path"`
	Access  []string `json:"access"`
	Pid     int      `json:"pid"`
	JailPid int      `json:"jail_pid"`
	Count   int      `json:"count"`
	Action  string   `json:"action"`
}

// ptReport is the part of the report the policy tests read beyond the
// harness's report struct.
type ptReport struct {
	Status      string        `json:"status"`
	ExitCode    int           `json:"exit_code"`
	Violations  []ptViolation `json:"violations"`
	Enforcement struct {
		LandlockABI    int      `json:"landlock_abi"`
		LandlockRights []string `json:"landlock_rights"`
		LandlockScopes []string `json:"landlock_scopes"`
		LandlockNet    []string `json:"landlock_net_rights"`
		Seccomp        string   `json:"seccomp"`
		Degraded       []string `json:"degraded"`
	} `json:"enforcement"`
}

func ptParse(t *testing.T, o *outcome) *ptReport {
	t.Helper()
	if o.reportRaw == nil {
		t.Fatalf("no report\n%s", o)
	}
	r := new(ptReport)
	if err := json.Unmarshal(o.reportRaw, r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return r
}

// find returns the violation for syscall name, or nil.
func (r *ptReport) find(name string) *ptViolation {
	for i := range r.Violations {
		if r.Violations[i].Syscall == name {
			return &r.Violations[i]
		}
	}
	return nil
}

var (
	tjsysOnce sync.Once
	tjsysPath string
	tjsysErr  error
	tjsysSkip string
)

// tjsysBinary is the static tjsys program in base ($TJSYS, or built from
// ./tjsys when a Go toolchain is at hand).
func tjsysBinary(t *testing.T) string {
	t.Helper()
	tjsysOnce.Do(func() {
		src := os.Getenv("TJSYS")
		if src == "" {
			if _, err := exec.LookPath("go"); err != nil {
				tjsysSkip = "TJSYS is not set and there is no Go toolchain to build ./tjsys"
				return
			}
			src = filepath.Join(base, "tjsys.built")
			cmd := exec.Command("go", "build", "-trimpath", "-o", src, "./tjsys")
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				tjsysErr = err
				tjsysSkip = string(out)
				return
			}
		}
		tjsysPath = filepath.Join(base, "tjsys")
		tjsysErr = copyFile(src, tjsysPath)
	})
	if tjsysSkip != "" && tjsysErr == nil {
		t.Skip(tjsysSkip)
	}
	if tjsysErr != nil {
		t.Fatalf("tjsys: %v %s", tjsysErr, tjsysSkip)
	}
	return tjsysPath
}

// sysWorkdir is u.workdir with tjsys in it too.
func (u *user) sysWorkdir(t *testing.T) string {
	t.Helper()
	bin := tjsysBinary(t)
	w := u.workdir(t)
	if err := os.Link(bin, filepath.Join(w, "tjsys")); err != nil {
		if err := copyFile(bin, filepath.Join(w, "tjsys")); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// sys runs w/tjsys with calls in the jail, and parses the report.
func (u *user) sys(t *testing.T, w string, flags []string, calls ...string) (*outcome, *ptReport) {
	t.Helper()
	flags = append([]string{"--env", "TJSYS_JAILED=1"}, flags...)
	o := u.jailRun(t, w, run{args: flags}, append([]string{filepath.Join(w, "tjsys")}, calls...)...)
	return o, ptParse(t, o)
}

// requireNotify skips unless denied calls are reported by name for u.
func requireNotify(t *testing.T, u *user) {
	t.Helper()
	if !u.check.enforced("seccomp") || !u.check.enforced("seccomp-notify") {
		t.Skipf("seccomp user notification is not available to %s here: denied calls have no names", u.name)
	}
}

// deniedCalls are the tjsys calls the default policy denies, with the
// syscall name the report must give.
var deniedCalls = []struct{ call, syscall string }{
	{"unshare", "unshare"},
	{"setns", "setns"},
	{"clone", "clone"},
	{"mount", "mount"},
	{"umount2", "umount2"},
	{"fsopen", "fsopen"},
	{"fsconfig", "fsconfig"},
	{"fsmount", "fsmount"},
	{"move_mount", "move_mount"},
	{"open_tree", "open_tree"},
	{"mount_setattr", "mount_setattr"},
	{"pivot_root", "pivot_root"},
	{"chroot", "chroot"},
	{"ptrace", "ptrace"},
	{"process_vm_readv", "process_vm_readv"},
	{"process_vm_writev", "process_vm_writev"},
	{"bpf", "bpf"},
	{"perf_event_open", "perf_event_open"},
	{"keyctl", "keyctl"},
	{"add_key", "add_key"},
	{"request_key", "request_key"},
	{"userfaultfd", "userfaultfd"},
	{"io_uring_setup", "io_uring_setup"},
	{"io_uring_enter", "io_uring_enter"},
	{"init_module", "init_module"},
	{"finit_module", "finit_module"},
	{"delete_module", "delete_module"},
	{"kexec_load", "kexec_load"},
	{"kexec_file_load", "kexec_file_load"},
	{"reboot", "reboot"},
	{"swapon", "swapon"},
	{"swapoff", "swapoff"},
	{"acct", "acct"},
	{"settimeofday", "settimeofday"},
	{"clock_settime", "clock_settime"},
	{"adjtimex", "adjtimex"},
	{"open_by_handle_at", "open_by_handle_at"},
	{"name_to_handle_at", "name_to_handle_at"},
	{"personality", "personality"},
	{"ioctl-tiocsti", "ioctl"},
	{"ioctl-tiocsti-highbits", "ioctl"},
	{"ioctl-tioclinux", "ioctl"},
	{"ioctl-tioclinux-highbits", "ioctl"},
	{"socket-packet", "socket"},
	{"socket-mptcp", "socket"},
	{"socket-netlink-audit", "socket"},
	// No setuid or setgid bit can be set or created.
	{"fchmod-setgid", "fchmod"},
	{"fchmodat-setgid", "fchmodat"},
	{"fchmodat2-setuid", "fchmodat2"},
	{"openat-creat-setuid", "openat"},
	{"openat-tmpfile-setuid", "openat"},
	{"mkdirat-setgid", "mkdirat"},
	{"mknodat-setgid", "mknodat"},
	// The init's limits and scheduling (limits_seccomp_test.go has more).
	{"prlimit64-init", "prlimit64"},
	{"setpriority-init", "setpriority"},
	{"ioprio_set-init", "ioprio_set"},
	{"sched_setaffinity-init", "sched_setaffinity"},
	{"sched_setscheduler-init", "sched_setscheduler"},
	{"sched_setparam-init", "sched_setparam"},
	{"sched_setattr-init", "sched_setattr"},
}

// legacyDenied are denied calls that exist on x86_64 only (tjsys answers
// ENOSYS elsewhere).
var legacyDenied = []struct{ call, syscall string }{
	{"chmod-setuid", "chmod"},
	{"creat-setuid", "creat"},
	{"open-creat-setgid", "open"},
	{"mkdir-setgid", "mkdir"},
	{"mknod-setuid", "mknod"},
}

func init() {
	if runtime.GOARCH == "amd64" {
		deniedCalls = append(deniedCalls, legacyDenied...)
	}
}

// allowedCalls are controls the default policy lets through, with the
// results the kernel gives (tjsys's stdin in the jail is not a terminal).
var allowedCalls = map[string][]string{
	"getppid":              {"ok"},
	"personality-query":    {"ok"},
	"ioctl-tcgets":         {"ok", "errno ENOTTY"},
	"socket-inet":          {"ok"},
	"socket-netlink-route": {"ok"},
	// The same calls as the setuid/setgid ones, without those bits.
	"fchmodat-0755":       {"ok"},
	"openat-creat-0644":   {"ok"},
	"openat-tmpfile-0600": {"ok"},
	"mkdirat-0755":        {"ok"},
	"mknodat-0644":        {"ok"},
	"chmod-0755":          {"ok"}, // x86_64 only
	"creat-0755":          {"ok"}, // x86_64 only
}

// enosysCalls fail with ENOSYS so that libc falls back to a call whose
// arguments the filter can read; they are not violations.
var enosysCalls = map[string]bool{"clone3": true, "openat2": true}

func requireAmd64Policy(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skipf("the x32/i386 payloads are x86_64 code; this is %s", runtime.GOARCH)
	}
}

// One run makes every denied call and the controls, in deny mode: each
// denied call fails with EPERM, clone3 with ENOSYS, the controls work, the
// run exits 0 as "exited", and each denied syscall is in the report once,
// by name, with its count, pids and first arguments.
func TestSeccompDeniedCalls(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		calls := []string{"getppid", "personality-query", "ioctl-tcgets", "socket-inet", "socket-netlink-route", "clone3", "openat2",
			"fchmodat-0755", "openat-creat-0644", "openat-tmpfile-0600", "mkdirat-0755", "mknodat-0644"}
		if runtime.GOARCH == "amd64" {
			calls = append(calls, "chmod-0755", "creat-0755")
		}
		for _, d := range deniedCalls {
			calls = append(calls, d.call)
		}
		o, r := u.sys(t, w, nil, calls...)
		lines := o.lines()
		if o.code != 0 || r.Status != "exited" || r.ExitCode != 0 || len(lines) != len(calls) {
			t.Fatalf("want exit 0, status exited and %d result lines\n%s", len(calls), o)
		}
		if r.Enforcement.Seccomp != "notify" {
			t.Errorf("enforcement.seccomp = %q, want notify", r.Enforcement.Seccomp)
		}
		want := map[string]int{} // syscall -> calls made
		for i, c := range calls {
			switch {
			case allowedCalls[c] != nil:
				if !oneOf(lines[i], allowedCalls[c]) {
					t.Errorf("%s (allowed): %q, want %v", c, lines[i], allowedCalls[c])
				}
			case enosysCalls[c]:
				if lines[i] != "errno ENOSYS" {
					t.Errorf("%s: %q, want errno ENOSYS", c, lines[i])
				}
			default:
				if lines[i] != "errno EPERM" {
					t.Errorf("%s: %q, want errno EPERM", c, lines[i])
				}
			}
		}
		for _, d := range deniedCalls {
			want[d.syscall]++
		}
		for name, n := range want {
			v := r.find(name)
			if v == nil {
				t.Errorf("no violation for %s in the report", name)
				continue
			}
			if v.Kind != "syscall" || v.Action != "denied" || v.Count != n || v.Pid <= 0 || v.JailPid <= 1 || len(v.Args) == 0 {
				t.Errorf("violation %+v, want kind syscall, action denied, count %d, pid and jail_pid set, args", *v, n)
			}
		}
		for _, v := range r.Violations {
			if want[v.Syscall] == 0 {
				t.Errorf("unexpected violation %+v (clone3, openat2 and the controls are not violations)", v)
			}
		}
		// The first call of each name is the one whose arguments are kept.
		checkArg := func(name string, i int, val string) {
			if v := r.find(name); v != nil && (len(v.Args) <= i || v.Args[i] != val) {
				t.Errorf("%s args %v, want args[%d] = %s", name, v.Args, i, val)
			}
		}
		checkArg("unshare", 0, "0x10000000") // CLONE_NEWUSER
		checkArg("clone", 0, "0x40000011")   // CLONE_NEWNET|SIGCHLD
		checkArg("personality", 0, "0x6")    // PER_BSD
		checkArg("ioctl", 1, "0x5412")       // TIOCSTI
		checkArg("socket", 0, "0x11")        // AF_PACKET
		checkArg("setns", 0, "0xffffffffffffffff")
		checkArg("fchmodat", 2, "0x5ed") // S_ISGID|0755
		checkArg("openat", 3, "0x9ed")   // S_ISUID|0755
		checkArg("mknodat", 2, "0x85ed") // S_IFREG|S_ISGID|0755
		noSetIDFiles(t, w)
		if !strings.Contains(o.stderr, "denied") {
			t.Errorf("no summary line about the denied calls on stderr\n%s", o)
		}
	})
}

// noSetIDFiles checks that nothing tjsys created in w has a setuid or
// setgid bit, whatever the calls answered.
func noSetIDFiles(t *testing.T, w string) {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(w, "tjsys-*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no tjsys-* files in the workdir %s (%v): the controls did not run", w, err)
	}
	for _, n := range names {
		st, err := os.Lstat(n)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("%s has mode %v: a setuid/setgid bit got through", n, st.Mode())
		}
	}
}

func oneOf(s string, set []string) bool {
	for _, x := range set {
		if s == x {
			return true
		}
	}
	return false
}

// With --on-violation kill, each denied call ends the run: status
// violation, exit 159, the call recorded; the line printed before it is
// kept and nothing after it runs. clone3's ENOSYS is not a violation.
func TestSeccompKillEach(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		seen := map[string]bool{}
		for _, d := range deniedCalls {
			if seen[d.syscall] && !strings.Contains(d.call, "highbits") {
				continue // one call per syscall, plus the masked ioctl compares
			}
			seen[d.syscall] = true
			t.Run(d.call, func(t *testing.T) {
				t.Parallel()
				o, r := u.sys(t, w, []string{"--on-violation", "kill"}, "getppid", d.call, "getppid")
				if o.code != 159 || r.Status != "violation" || r.ExitCode != 159 {
					t.Fatalf("want exit 159, status violation\n%s", o)
				}
				v := r.find(d.syscall)
				if v == nil || v.Kind != "syscall" || (v.Action != "killed" && v.Action != "denied") || v.Count < 1 || v.Pid <= 0 || v.JailPid <= 1 {
					t.Errorf("violation for %s: %+v, want kind syscall, killed or denied, count >= 1, pids set\n%s", d.syscall, v, o)
				}
				if len(r.Violations) != 1 {
					t.Errorf("want exactly one violation, got %+v", r.Violations)
				}
				// The caller is killed at the call: it never sees the answer.
				if o.stdout != "ok\n" {
					t.Errorf("stdout %q, want only the first getppid's line (killed at the call)", o.stdout)
				}
			})
		}
		for c := range enosysCalls {
			t.Run(c, func(t *testing.T) {
				t.Parallel()
				o, r := u.sys(t, w, []string{"--on-violation", "kill"}, c, "getppid")
				if o.code != 0 || r.Status != "exited" || o.stdout != "errno ENOSYS\nok\n" || len(r.Violations) != 0 {
					t.Errorf("%s under --on-violation kill: want ENOSYS, the run going on and no violation\n%s", c, o)
				}
			})
		}
	})
}

// Static payloads that make one getpid through a foreign entry point and
// then exit(0) natively (x32: 39 | __X32_SYSCALL_BIT; i386: 20 via int 0x80),
// as in seccomp/arch_test.go.
var ptArchPayloads = map[string]string{
	"x32":  ".globl _start\n_start:\n mov $0x40000027, %eax\n syscall\n mov $60, %eax\n xor %edi, %edi\n syscall\n",
	"i386": ".globl _start\n_start:\n mov $20, %eax\n int $0x80\n mov $60, %eax\n xor %edi, %edi\n syscall\n",
}

// foreignArchPayloads are the payloads TestSeccompForeignArch runs on this
// architecture: x32 and i386 on amd64, aarch32 ("arm") on arm64.
func foreignArchPayloads(t *testing.T) []string {
	t.Helper()
	switch runtime.GOARCH {
	case "amd64":
		return []string{"x32", "i386"}
	case "arm64":
		return []string{"arm"}
	}
	t.Skipf("no foreign-entry-point payloads for %s", runtime.GOARCH)
	return nil
}

// aarch32Payload is a static ELF32 ARM (EABI5) executable that makes one
// getpid (r7=20, svc 0) and exits 0 (r7=1), all in aarch32 state. It is
// written byte by byte so no ARM cross assembler is needed (the VM guests
// have no toolchain at all).
func aarch32Payload() []byte {
	const base, hdr = 0x10000, 52 + 32 // load address; ELF header + one program header
	code := []uint32{
		0xe3a07014, // mov r7, #20   (getpid)
		0xef000000, // svc #0
		0xe3a00000, // mov r0, #0
		0xe3a07001, // mov r7, #1    (exit)
		0xef000000, // svc #0
	}
	size := uint32(hdr + 4*len(code))
	b := []byte{0x7f, 'E', 'L', 'F', 1 /* 32-bit */, 1 /* LE */, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	le := binary.LittleEndian
	b = le.AppendUint16(b, 2)          // e_type: ET_EXEC
	b = le.AppendUint16(b, 40)         // e_machine: EM_ARM
	b = le.AppendUint32(b, 1)          // e_version
	b = le.AppendUint32(b, base+hdr)   // e_entry (bit 0 clear: ARM state)
	b = le.AppendUint32(b, 52)         // e_phoff
	b = le.AppendUint32(b, 0)          // e_shoff
	b = le.AppendUint32(b, 0x05000000) // e_flags: EABI version 5
	b = le.AppendUint16(b, 52)         // e_ehsize
	b = le.AppendUint16(b, 32)         // e_phentsize
	b = le.AppendUint16(b, 1)          // e_phnum
	b = le.AppendUint16(b, 40)         // e_shentsize
	b = le.AppendUint16(b, 0)          // e_shnum
	b = le.AppendUint16(b, 0)          // e_shstrndx
	for _, v := range []uint32{1 /* PT_LOAD */, 0, base, base, size, size, 5 /* R+X */, 0x1000} {
		b = le.AppendUint32(b, v)
	}
	for _, c := range code {
		b = le.AppendUint32(b, c)
	}
	return b
}

// ptBuildPayload puts a payload into dir: the x86 ones assembled with gcc
// (it skips when gcc is missing), the aarch32 one written directly. It
// skips when the payload cannot run even without a filter.
func ptBuildPayload(t *testing.T, dir, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if name == "arm" {
		if err := os.WriteFile(out, aarch32Payload(), 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		gcc, err := exec.LookPath("gcc")
		if err != nil {
			t.Skip("gcc is not installed: cannot build the x32/i386 payloads")
		}
		src := filepath.Join(t.TempDir(), name+".S")
		if err := os.WriteFile(src, []byte(ptArchPayloads[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command(gcc, "-static", "-nostdlib", "-o", out, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc %s: %v\n%s", name, err, b)
		}
	}
	if err := os.Chmod(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// Without a filter it must exit 0 (a kernel without ia32 emulation
	// kills the i386 one; x32 without CONFIG_X86_X32_ABI gets ENOSYS, fine;
	// an arm64 kernel without CONFIG_COMPAT or a CPU without AArch32 at EL0
	// refuses the aarch32 one with ENOEXEC).
	if b, err := exec.Command(out).CombinedOutput(); err != nil {
		t.Skipf("%s payload fails without a filter (no 32-bit compat entry point?): %v %s", name, err, b)
	}
	return out
}

// x32 and i386 calls (on amd64), aarch32 calls (on arm64) kill the run, in
// deny mode as in kill mode, and the report says "arch" with the foreign
// call's name.
func TestSeccompForeignArch(t *testing.T) {
	names := foreignArchPayloads(t)
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		for _, name := range names {
			for _, mode := range []string{"deny", "kill"} {
				t.Run(name+"-"+mode, func(t *testing.T) {
					t.Parallel()
					w := u.workdir(t)
					payload := ptBuildPayload(t, w, name)
					if err := os.Chown(payload, u.uid, u.gid); err != nil {
						t.Fatal(err)
					}
					o := u.jailRun(t, w, run{args: []string{"--on-violation", mode}}, payload)
					r := ptParse(t, o)
					if o.code != 159 || r.Status != "violation" {
						t.Fatalf("want exit 159, status violation\n%s", o)
					}
					v := r.find(name + ":getpid")
					if v == nil || v.Kind != "arch" || v.Action != "killed" || v.Count != 1 || len(r.Violations) != 1 {
						t.Errorf("want one arch violation %s:getpid, killed: %+v\n%s", name, r.Violations, o)
					}
				})
			}
		}
	})
}

// A profile that allows @ptrace and personality lets those calls through
// (positive control: the kernel answers, not the filter), while the rest of
// the default denials hold; a denied getppid shows deny works by name.
func TestSeccompProfileAllowDeny(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		prof := filepath.Join(u.dir(t), "p.toml")
		text := "extends = \"default\"\n[seccomp]\nallow = [\"@ptrace\", \"personality\"]\ndeny = [\"getppid\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o, r := u.sys(t, w, []string{"--profile", prof}, "process_vm_readv", "ptrace", "personality", "bpf", "getppid")
		l := o.lines()
		if o.code != 0 || r.Status != "exited" || len(l) != 5 {
			t.Fatalf("want exit 0 and 5 lines\n%s", o)
		}
		if l[0] != "ok" {
			t.Errorf("process_vm_readv with @ptrace allowed: %q, want ok", l[0])
		}
		// PTRACE_PEEKUSER on a process we do not trace: the kernel's ESRCH.
		if l[1] != "errno ESRCH" {
			t.Errorf("ptrace with @ptrace allowed: %q, want errno ESRCH from the kernel", l[1])
		}
		if l[2] != "ok" {
			t.Errorf("personality(PER_BSD) with personality allowed: %q, want ok", l[2])
		}
		if l[3] != "errno EPERM" || r.find("bpf") == nil {
			t.Errorf("bpf is still denied by default: %q, violations %+v", l[3], r.Violations)
		}
		if l[4] != "errno EPERM" || r.find("getppid") == nil {
			t.Errorf("getppid denied by the profile: %q, violations %+v", l[4], r.Violations)
		}
		for _, n := range []string{"process_vm_readv", "ptrace", "personality"} {
			if r.find(n) != nil {
				t.Errorf("%s allowed by the profile but reported: %+v", n, r.Violations)
			}
		}
	})
}

// Allowing the calls by name lifts neither the setuid/setgid rule nor
// openat2's ENOSYS; the same calls without the bits work.
func TestSeccompSetIDNotLifted(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		prof := filepath.Join(u.dir(t), "p.toml")
		text := "extends = \"default\"\n[seccomp]\nallow = [\"fchmodat\", \"openat\", \"openat2\", \"@file-system\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o, r := u.sys(t, w, []string{"--profile", prof}, "fchmodat-setgid", "fchmodat-0755", "openat-creat-setuid", "openat-creat-0644", "openat2")
		want := []string{"errno EPERM", "ok", "errno EPERM", "ok", "errno ENOSYS"}
		if l := o.lines(); o.code != 0 || r.Status != "exited" || strings.Join(l, "|") != strings.Join(want, "|") {
			t.Fatalf("want %q and exit 0\n%s", want, o)
		}
		for _, n := range []string{"fchmodat", "openat"} {
			if v := r.find(n); v == nil || v.Count != 1 || v.Action != "denied" {
				t.Errorf("%s: violation %+v, want one, denied", n, v)
			}
		}
		if len(r.Violations) != 2 {
			t.Errorf("violations %+v, want fchmodat and openat only", r.Violations)
		}
		noSetIDFiles(t, w)
	})
}

// Stage 2 runs no Go code under the filter, so a profile may deny what a
// Go runtime needs and a C command does not: /bin/true still runs, and
// nothing it calls is reported. What stage 2 itself needs stays refused.
func TestSeccompProfileDeniesRuntimeCalls(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		w := u.sysWorkdir(t)
		prof := filepath.Join(u.dir(t), "p.toml")
		text := "extends = \"default\"\n[seccomp]\ndeny = [\"futex\", \"madvise\", \"sched_yield\", \"tgkill\", \"sigaltstack\", \"epoll_pwait\", \"nanosleep\", \"rt_sigaction\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		o := u.jailRun(t, w, run{args: []string{"--profile", prof}}, "/bin/true")
		if o.code != 0 || o.noReport || o.report.Status != "exited" || len(o.report.Violations) != 0 {
			t.Fatalf("/bin/true under a profile denying Go runtime calls: want exit 0, status exited, no violations\n%s", o)
		}
		text = "extends = \"default\"\n[seccomp]\ndeny = [\"sendmsg\"]\n"
		if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		oneLineError(t, u.jailRun(t, w, run{args: []string{"--profile", prof}}, "/bin/true"), "sendmsg", "needed by the jail itself")
	})
}

// An unknown syscall name in a profile is refused before anything runs,
// with the name in the error.
func TestSeccompProfileUnknownName(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		d := u.dir(t)
		for _, field := range []string{"allow", "deny"} {
			prof := filepath.Join(d, field+".toml")
			text := "extends = \"default\"\n[seccomp]\n" + field + " = [\"getppid\", \"no_such_syscall_tj\"]\n"
			if err := os.WriteFile(prof, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--profile", prof, "--workdir", d}
			for _, l := range u.degraded {
				args = append(args, "--allow-degraded", l)
			}
			o := u.exec(t, run{args: append(args, "--", "/bin/true")})
			oneLineError(t, o, "no_such_syscall_tj")
		}
	})
}

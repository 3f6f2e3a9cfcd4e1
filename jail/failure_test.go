package jail

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"unicode"

	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/landlock"
)

// testPlan is an init plan with one of everything a failure text can
// name: a bind, trusted files, Landlock rules and a port, rlimits.
func testPlan() *initPlan {
	return &initPlan{
		mounts: []Mount{{Kind: MountBind, Source: "/host/src", Dest: "/data"}},
		over:   []hostside.Over{{Dest: "/w/.tooljail", ReadOnly: true}, {Dest: "/w", ReadOnly: false}},
		ll: &landlock.Plan{
			Paths: []landlock.PathPlan{{Path: "/usr", Access: landlock.ReadExec}, {Path: "/etc/passwd", Access: landlock.List, DirOnly: true}},
			Ports: []landlock.PortPlan{{Port: 8080}},
		},
		stage2: &stage2{
			cfg:          &stage2Config{Args: []string{"ls"}, Env: []string{"PATH=/opt/tools:/usr/bin"}, Dir: "/work"},
			paths:        []string{"/usr/bin/ls", "/bin/ls"},
			rlimits:      []rlimitSet{{"core", 0}, {"nofile", 64}},
			thp:          1,
			timerSlack:   50000,
			seccompFlags: 0x1,
			abi:          6,
		},
	}
}

// number is the number of the row of init_steps.h named name.
func number(t *testing.T, rows []phrase, name string) int {
	t.Helper()
	for i, r := range rows {
		if i > 0 && r.Name == name {
			return i
		}
	}
	t.Fatalf("init_steps.h has no %s", name)
	return 0
}

// failureCase is a record, by the names of its step and op, and the error
// it must become.
type failureCase struct {
	step, op string
	err      syscall.Errno
	index    int
	path     string
	isDir    bool
	want     string
}

// The texts users see, one case at least for every step and reason of
// init_steps.h (TestFailureCasesCoverEveryRow).
var initCases = []failureCase{
	{step: "FDS", err: syscall.EBADF, want: "set up the init's descriptors: bad file descriptor"},
	{step: "SETGROUPS", err: syscall.EPERM, want: "drop supplementary groups: operation not permitted"},
	{step: "SETID", err: syscall.EPERM, index: 0, want: "become gid 0 of the jail's user namespace (its host identity): operation not permitted"},
	{step: "SETID", err: syscall.EPERM, index: 1, want: "become uid 0 of the jail's user namespace (its host identity): operation not permitted"},
	{step: "RECVFDS", err: syscall.EPROTO, index: 3, want: "receive the host paths' descriptors (3 so far): protocol error"},
	{step: "PRIVATE", err: syscall.EINVAL, want: "make mounts private: invalid argument"},
	{step: "BASE", err: syscall.EPERM, path: "/tmp", want: "mount temporary root on /tmp: operation not permitted"},
	{step: "BASE", op: "CHDIR", err: syscall.EACCES, path: "/tmp", want: "mount temporary root on /tmp: chdir: permission denied"},
	{step: "BASE_DIR", op: "MKDIR", err: syscall.EEXIST, path: "oldroot", want: "mkdir oldroot: file exists"},
	{step: "PIVOT_TMP", op: "CHDIR", err: syscall.EACCES, want: "pivot_root to temporary root: chdir: permission denied"},
	{step: "OLDROOT", op: "OPEN", err: syscall.EACCES, want: "open old root: permission denied"},
	{step: "MASKFILE", op: "CREATE", err: syscall.EROFS, want: "create mask file: read-only file system"},
	{step: "ROOTFS", op: "FSMOUNT", err: syscall.EPERM, want: "mount jail root: fsmount: operation not permitted"},
	{step: "FS", op: "MOVE_MOUNT", err: syscall.EPERM, path: "/proc", want: "mount /proc: move_mount: operation not permitted; a container that masks paths in /proc prevents a fresh /proc for the jail: see `tooljail check` and docs/containers.md; or run without namespaces, confined by Landlock and seccomp alone: --allow-degraded namespaces"},
	{step: "PROC_KNOB", op: "OPEN_TREE", err: syscall.EPERM, path: "sys", want: "make /proc/sys read-only or masked: open_tree: operation not permitted"},
	{step: "DEVNODE", op: "OPEN", err: syscall.ENOENT, path: "/dev/null", want: "host /dev/null: no such file or directory (the jail needs the host's basic device nodes)"},
	{step: "DEVBIND", op: "SETATTR", err: syscall.EPERM, path: "/dev/tty", want: "bind /dev/tty: mount_setattr: operation not permitted"},
	{step: "DEVLINK", op: "SYMLINK", err: syscall.EEXIST, path: "fd", want: "symlink /dev/fd: file exists"},
	{step: "DEVDIR", op: "MKDIR", err: syscall.EEXIST, path: "pts", want: "mkdir /dev/pts: file exists"},
	{step: "ETC_CREATE", op: "CREATE", err: syscall.EEXIST, path: "passwd", want: "create /etc/passwd: file exists"},
	{step: "ETC_WRITE", op: "WRITE", err: syscall.EIO, path: "passwd", want: "write /etc/passwd: input/output error"},
	{step: "DEST", err: syscall.EACCES, index: -1, path: "/data/x", want: "mount destination /data/x: permission denied"},
	{step: "DEST", op: "STATX", err: syscall.EPERM, index: -1, path: "/data/x", want: "mount destination /data/x: statx: operation not permitted"},
	{step: "DEST", op: "DEST_KIND", index: -1, path: "/data/x", isDir: true, want: "mount destination /data/x: exists in the jail but is not a directory like its source"},
	{step: "DEST", op: "DEST_KIND", index: -1, path: "/data/x", want: "mount destination /data/x: exists in the jail but is not a file like its source"},
	{step: "DEST", op: "DEST_OWN", index: -1, path: "/data/newdir", want: "mount destination /data/newdir does not exist, and creating it would create newdir on the host (inside a bind mount); create it on the host first or choose another destination"},
	{step: "DEST", op: "DEST_ESCAPES", err: syscall.EXDEV, index: -1, path: "/data/abs/escaped", want: "mount destination /data/abs/escaped: its path goes through a symlink that leaves the jail root; give the real path instead"},
	{step: "MOUNTPOINT", op: "MKDIR", err: syscall.EROFS, index: -1, path: "/data/x", want: "create mount point /data/x: read-only file system"},
	{step: "BIND", op: "OPEN_TREE", err: syscall.EINVAL, index: 0, path: "/data", want: "bind /host/src on /data: open_tree: invalid argument"},
	{step: "OVERLAY", op: "FSCONFIG", err: syscall.EINVAL, index: 0, path: "/data", want: "changes: the overlay over /data (its upper layer in the change store): fsconfig: invalid argument; this host refuses overlayfs in the jail's user namespace for this directory or store (`tooljail check` says why); run with --changes off, or keep the change store (--changes-dir) on ext4, xfs or btrfs"},
	{step: "READLINK", op: "READLINK", err: syscall.EINVAL, path: "/host/link", want: "read symlink /host/link: invalid argument"},
	{step: "SYMLINK", op: "SYMLINK", err: syscall.EEXIST, path: "/bin", want: "symlink /bin: file exists"},
	{step: "TMPFS", op: "TOO_MANY", err: syscall.ENOSPC, path: "/scratch", want: "tmpfs /scratch: more than 4096 tmpfs mounts: no space left on device"},
	{step: "OVER", op: "MOVE_MOUNT", err: syscall.EPERM, index: 0, path: "/w/.tooljail", want: "bind /w/.tooljail (a file tooljail trusts) over itself: move_mount: operation not permitted"},
	{step: "OVER", op: "TRUSTED_GONE", err: syscall.ENOENT, index: 1, path: "/w", want: "/w, a directory holding a file tooljail trusts, is gone from the jail's view: it was moved while the jail started"},
	{step: "OVER", op: "TRUSTED_CHANGED", index: 0, path: "/w/.tooljail", want: "/w/.tooljail, a file tooljail trusts, was replaced while the jail started"},
	{step: "MASK", op: "STAT", err: syscall.EIO, path: "/w/secrets", want: "mask /w/secrets: stat: input/output error"},
	{step: "MASK", op: "MASK_MISSING", err: syscall.ENOENT, path: "/w/secrets", want: "mask /w/secrets: nothing is there in the jail, so there is nothing to hide; refusing to run, since an earlier run that could write the directory may have moved what the mask hides: check the host path, or remove the mask"},
	{step: "RDONLY", err: syscall.EPERM, want: "make jail root read-only: operation not permitted"},
	{step: "PIVOT", err: syscall.EINVAL, want: "pivot_root into jail root: invalid argument"},
	{step: "DETACH", op: "CHDIR", err: syscall.ENOENT, want: "detach host root: chdir: no such file or directory"},
	{step: "HOSTNAME", err: syscall.EINVAL, path: "box", want: `set hostname "box": invalid argument`},
	{step: "LOOPBACK", op: "IOCTL_SET", err: syscall.EPERM, want: "bring loopback up: set flags: operation not permitted"},
	{step: "NET_LISTEN", op: "BIND_PORT", err: syscall.EADDRINUSE, index: 2, want: "network allow mode: the DNS (UDP) socket on the jail's loopback: take its port: address already in use"},
	{step: "NET_LISTEN", op: "SEND", err: syscall.EPIPE, index: 0, want: "network allow mode: the HTTP proxy socket on the jail's loopback: send to the supervisor: broken pipe"},
	{step: "LL_CREATE", err: syscall.EOPNOTSUPP, want: "landlock: create ruleset (ABI 6): operation not supported"},
	{step: "LL_OPEN", op: "OPEN", err: syscall.ENOENT, index: 0, path: "/usr", want: "landlock: rule /usr (rx): open: no such file or directory (the jail must only pass paths it mounted)"},
	{step: "LL_DIRONLY", index: 1, path: "/etc/passwd", want: `landlock: rule /etc/passwd: access "list" applies to directories only`},
	{step: "LL_RULE", err: syscall.EINVAL, index: 0, path: "/usr", want: "landlock: rule /usr: invalid argument"},
	{step: "LL_PORT", err: syscall.EINVAL, index: 0, want: "landlock: rule for TCP port 8080: invalid argument"},
	{step: "SUBREAPER", err: syscall.EINVAL, want: "become the run's child subreaper (PR_SET_CHILD_SUBREAPER): invalid argument"},
	{step: "CHILDREN", err: syscall.ENOENT, want: "open /proc/thread-self/children: no such file or directory (without namespaces tooljail finds the processes a command leaves there: it needs a mounted /proc and a kernel built with CONFIG_PROC_CHILDREN)"},
	{step: "STAGE2", op: "WRITE", err: syscall.EPIPE, want: "start stage 2: write: broken pipe"},
	{step: "STAGE2_MAP", op: "WRITE", err: syscall.EPERM, index: 1, want: "stage 2 uid_map: operation not permitted"},
	{step: "WAIT", err: syscall.ECHILD, want: "wait for the command: no child processes"},
	{step: "SESSION", err: syscall.EPROTO, want: "session: protocol error"},
}

var stage2Cases = []failureCase{
	{step: "SYNC", want: "stage 2: the init did not set up its user namespace (end of file)"},
	{step: "SETSID", err: syscall.EPERM, want: "stage 2: setsid: operation not permitted"},
	{step: "PDEATHSIG", want: "stage 2: parent death signal: end of file"},
	{step: "IDENTITY", err: syscall.EINVAL, index: 3, want: "become the jail's host identity (setresuid): invalid argument (root without namespaces needs CAP_SETPCAP, CAP_SETUID and CAP_SETGID, and the uid and gid mapped in its user namespace)"},
	{step: "IDENTITY", err: syscall.EPERM, index: 0, want: "become the jail's host identity (drop the capability bounding set): operation not permitted (root without namespaces needs CAP_SETPCAP, CAP_SETUID and CAP_SETGID, and the uid and gid mapped in its user namespace)"},
	{step: "CAPBSET", err: syscall.EPERM, index: 40, want: "drop capability 40 from the bounding set: operation not permitted"},
	{step: "NNP", err: syscall.EINVAL, want: "set no_new_privs: invalid argument"},
	{step: "AMBIENT", err: syscall.EINVAL, want: "clear ambient capabilities: invalid argument"},
	{step: "CAPSET", err: syscall.EPERM, want: "clear capabilities: operation not permitted"},
	{step: "CHDIR", err: syscall.ENOENT, want: "working directory /work: no such file or directory"},
	{step: "RLIMIT", err: syscall.EPERM, index: 1, want: "set nofile limit to 64: operation not permitted (it cannot be raised above the caller's hard limit)"},
	{step: "THP", err: syscall.EINVAL, want: "set PR_SET_THP_DISABLE to 1: invalid argument"},
	{step: "TIMERSLACK", err: syscall.EINVAL, want: "set the timer slack to 50000 ns: invalid argument"},
	{step: "SIGIGN", err: syscall.EINVAL, index: 32, want: "ignore signal 32 as the caller did: invalid argument"},
	{step: "LANDLOCK", err: syscall.EPERM, want: "landlock: restrict (ABI 6): operation not permitted"},
	{step: "SECCOMP", err: syscall.EINVAL, want: "seccomp: install (flags 0x1): invalid argument"},
	{step: "READY", err: syscall.EPIPE, want: "stage 2: the supervisor is gone (broken pipe)"},
	{step: "ACK", want: "stage 2: the supervisor is gone (end of file)"},
	{step: "CALL", err: syscall.EPROTO, want: "warm jail: receive the command: protocol error"},
	{step: "TTY", err: syscall.ENOSPC, index: 0, want: "terminal: open /dev/pts/ptmx: no space left on device"},
	{step: "TTY", err: syscall.EPERM, index: 5, want: "terminal: make it the controlling terminal: operation not permitted"},
	{step: "FDS", err: syscall.EINVAL, want: "stage 2: mark descriptors close-on-exec: invalid argument"},
	{step: "EXEC", err: syscall.E2BIG, index: 0, want: "ls: argument list too long"},
	{step: "EXEC_DENIED", err: syscall.EACCES, index: 1, want: "ls: not executable: permission denied"},
	{step: "EXEC_DENIED", err: syscall.EACCES, index: 1, isDir: true, want: "ls: is a directory"},
	{step: "EXEC_NOT_FOUND", err: syscall.ENOENT, index: -1, want: "ls: command not found in the jail (PATH=/opt/tools:/usr/bin)"},
}

func (c failureCase) record(t *testing.T, typ int, steps []phrase) record {
	r := record{Type: typ, Step: number(t, steps, c.step), Err: int(c.err), Index: c.index, Path: c.path, IsDir: c.isDir}
	if c.op != "" {
		r.Op = number(t, initOps(), c.op)
	}
	return r
}

func TestInitFailures(t *testing.T) {
	ip := testPlan()
	for _, c := range initCases {
		r := c.record(t, recInitFail, initSteps())
		e := ip.failure(r)
		if e.Code != ExitSetup || e.Error() != c.want {
			t.Errorf("%s/%s: %d %q\nwant %d %q", c.step, c.op, e.Code, e.Error(), ExitSetup, c.want)
		}
		if c.err != 0 && !errors.Is(e, c.err) {
			t.Errorf("%s/%s: %v does not wrap %v", c.step, c.op, e, c.err)
		}
	}
	if got, want := ip.failure(record{Type: recInitFail, Step: 999, Err: int(syscall.EPERM)}).Error(), "the jail's init failed at step 999: operation not permitted"; got != want {
		t.Errorf("unknown step: %q, want %q", got, want)
	}
}

func TestStage2Failures(t *testing.T) {
	ip := testPlan()
	for _, c := range stage2Cases {
		r := c.record(t, recStage2Fail, stage2Steps())
		r.Code = 126
		e := ip.failure(r)
		if e.Code != 126 || e.Error() != c.want {
			t.Errorf("%s: %d %q\nwant 126 %q", c.step, e.Code, e.Error(), c.want)
		}
	}
	// A command given as a path is not looked up; a record without an
	// exit code is a setup error.
	ip.stage2.cfg.Args = []string{"./tool"}
	r := record{Type: recStage2Fail, Step: number(t, stage2Steps(), "EXEC_NOT_FOUND"), Err: int(syscall.ENOENT), Index: -1}
	if e := ip.failure(r); e.Code != ExitSetup || e.Error() != "./tool: no such file in the jail" {
		t.Errorf("a path not found: %d %q", e.Code, e.Error())
	}
	r = record{Type: recStage2Fail, Step: 999, Err: int(syscall.EPERM)}
	if got, want := ip.failure(r).Error(), "stage 2 failed at step 999: operation not permitted"; got != want {
		t.Errorf("unknown step: %q, want %q", got, want)
	}
}

// Every step and reason of init_steps.h has a case above.
func TestFailureCasesCoverEveryRow(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range initCases {
		covered["init "+c.step] = true
		if c.op != "" && initOps()[number(t, initOps(), c.op)].Reason {
			covered["reason "+c.op] = true
		}
	}
	for _, c := range stage2Cases {
		covered["stage2 "+c.step] = true
	}
	for kind, rows := range map[string][]phrase{"init": initSteps(), "stage2": stage2Steps(), "reason": initOps()} {
		for _, r := range rows[1:] {
			if (kind != "reason" || r.Reason) && !covered[kind+" "+r.Name] {
				t.Errorf("no test case for %s %s of init_steps.h", kind, r.Name)
			}
		}
	}
}

// Every text of init_steps.h, with every system call an init step may
// name, reads without a word said twice at a join ("landlock: landlock
// rule", "symlink /dev/fd: symlink: ...") and with every placeholder
// filled in, also after the "tooljail: " the CLI puts in front.
func TestFailureTextsDoNotStutter(t *testing.T) {
	ip := testPlan()
	var texts []string
	for step := 1; step < len(initSteps()); step++ {
		for op := 0; op < len(initOps()); op++ {
			r := record{Type: recInitFail, Step: step, Op: op, Err: int(syscall.EPERM), Path: "/x/y"}
			texts = append(texts, ip.failure(r).Error())
		}
	}
	for step := 1; step < len(stage2Steps()); step++ {
		for _, isDir := range []bool{false, true} {
			r := record{Type: recStage2Fail, Step: step, Err: int(syscall.EPERM), IsDir: isDir, Path: "/x/y"}
			texts = append(texts, ip.failure(r).Error())
		}
	}
	seen := map[string]bool{}
	for _, text := range texts {
		if seen[text] {
			continue
		}
		seen[text] = true
		if strings.ContainsAny(text, "{}") {
			t.Errorf("a placeholder is not filled in: %q", text)
		}
		if w := stutter("tooljail: " + text); w != "" {
			t.Errorf("%q says %q twice", text, w)
		}
	}
}

// stutter is a word text says twice, ignoring punctuation and case: two
// words in a row, or the first words of two parts joined by ": " ("bind
// /a: bind: ..."). "" when there is none.
func stutter(text string) string {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
		})
	}
	all := words(text)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			return all[i]
		}
	}
	parts := strings.Split(text, ": ")
	for i := 1; i < len(parts); i++ {
		a, b := words(parts[i-1]), words(parts[i])
		if len(a) > 0 && len(b) > 0 && a[0] == b[0] {
			return a[0]
		}
	}
	return ""
}

func TestStutter(t *testing.T) {
	for text, want := range map[string]string{
		"landlock: landlock rule /usr": "landlock",
		"landlock: rule /usr":          "",
		"symlink /dev/fd: symlink: x":  "symlink",
		"symlink /dev/fd: x":           "",
		"mount /proc: move_mount: x":   "",
		"write /etc/passwd: Write: x":  "write",
		"set the the limit":            "the",
	} {
		if got := stutter(text); got != want {
			t.Errorf("stutter(%q) = %q, want %q", text, got, want)
		}
	}
}

// A fresh /proc refused with EPERM (a container's masked /proc) points at
// the container docs; the same step on another path, or another errno,
// has no hint, and the error still wraps its errno.
func TestFailureHint(t *testing.T) {
	ip := testPlan()
	for _, c := range []struct {
		r    record
		hint bool
	}{
		{record{Type: recInitFail, Step: stepFS, Err: int(syscall.EPERM), Path: "/proc"}, true},
		{record{Type: recInitFail, Step: stepFS, Err: int(syscall.EACCES), Path: "/proc"}, false},
		{record{Type: recInitFail, Step: stepFS, Err: int(syscall.EPERM), Path: "/dev/pts"}, false},
		{record{Type: recInitFail, Step: stepFS + 1, Err: int(syscall.EPERM), Path: "/proc"}, false},
	} {
		e := ip.failure(c.r)
		if got := strings.Contains(e.Error(), "docs/containers.md"); got != c.hint {
			t.Errorf("%+v: %q, hint %v, want %v", c.r, e.Error(), got, c.hint)
		}
		if !errors.Is(e, syscall.Errno(c.r.Err)) {
			t.Errorf("%+v: %v does not wrap its errno", c.r, e)
		}
	}
}

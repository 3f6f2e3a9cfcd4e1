package seccomp

import (
	"reflect"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

func TestArgChecks(t *testing.T) {
	sock := restricted()["socket"]
	for _, c := range []struct {
		name     string
		call     string
		lifted   bool
		families []uint64
		alts     [][]cond
		ok       bool
	}{
		{"unchecked call: plain allow", "read", false, nil, nil, true},
		{"checked call", "clone", false, nil, restricted()["clone"], true},
		{"check lifted: plain allow", "clone", true, nil, nil, true},
		{"socket, no family refused", "socket", false, nil, sock, true},
		{"socket lifted, no family refused", "socket", true, nil, nil, true},
		{"socket without the refused families", "socket", false, []uint64{unix.AF_INET, unix.AF_INET6}, [][]cond{sock[0], sock[3]}, true},
		{"socket lifted: any family but the refused", "socket", true, []uint64{unix.AF_INET},
			[][]cond{{{0, libseccomp.CompareNotEqual, []uint64{unix.AF_INET}}}}, true},
		{"socket with every family refused: no rule", "socket", false, []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK}, nil, false},
		// Refused families concern socket only.
		{"other call with families refused", "clone", false, []uint64{unix.AF_INET}, restricted()["clone"], true},
	} {
		r := &resolved{lifted: map[string]bool{c.call: c.lifted}, noFamilies: c.families}
		alts, ok := argChecks(c.call, r)
		if ok != c.ok || !reflect.DeepEqual(alts, c.alts) {
			t.Errorf("%s: argChecks = %v, %v; want %v, %v", c.name, alts, ok, c.alts, c.ok)
		}
	}
}

func TestActionsFor(t *testing.T) {
	n := actionsFor(true)
	if n.deny != libseccomp.ActNotify || n.badArch != libseccomp.ActNotify || n.denyRet != unix.SECCOMP_RET_USER_NOTIF {
		t.Errorf("notify: %+v", n)
	}
	e := actionsFor(false)
	if e.deny != libseccomp.ActErrno.SetReturnCode(int16(unix.EPERM)) || e.badArch != libseccomp.ActKillProcess || e.denyRet != unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM) {
		t.Errorf("errno: %+v", e)
	}
}

func TestArmLabel(t *testing.T) {
	for _, c := range []struct{ call, label, then string }{
		{"ioctl", "ioctl", ""},
		{"socket", "socket", ""},
		{"prlimit64", "prlimit64", ""},
		{"openat2", "enosys", ""},
		{"chmod", "mode1", ""},
		{"fchmodat", "mode2", ""},
		{"open", "flags1-mode2", "mode2"},
		{"openat", "flags2-mode3", "mode3"},
		{"setpriority", whoLabel(unix.PRIO_PROCESS), ""},
		{"sched_setattr", "pid1", ""},
	} {
		if l, then := armLabel(c.call); l != c.label || then != c.then {
			t.Errorf("armLabel(%s) = %q, %q; want %q, %q", c.call, l, then, c.label, c.then)
		}
	}
}

func TestPrologueArms(t *testing.T) {
	// Only the calls this architecture has get an arm, in number order;
	// an open's arm needs its mode check too.
	arms, need := prologueArms(map[string]uint32{"openat": 257, "ioctl": 16, "nosuchcall": 1})
	if want := []branch{{16, "ioctl"}, {257, "flags2-mode3"}}; !reflect.DeepEqual(arms, want) {
		t.Errorf("arms %v, want %v", arms, want)
	}
	if want := map[string]bool{"ioctl": true, "flags2-mode3": true, "mode3": true}; !reflect.DeepEqual(need, want) {
		t.Errorf("need %v, want %v", need, want)
	}
}

package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// runFilter runs a classic BPF seccomp program over one call: the
// instructions containerFilter emits, and nothing else.
func runFilter(t *testing.T, prog []unix.SockFilter, arch uint32, nr int, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[offNr:], uint32(nr))
	binary.LittleEndian.PutUint32(data[offArch:], arch)
	binary.LittleEndian.PutUint64(data[offArg0:], arg0)
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var taken bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				taken = acc == in.K
			case unix.BPF_JGE:
				taken = acc >= in.K
			case unix.BPF_JSET:
				taken = acc&in.K != 0
			}
			if taken {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: unexpected code %#x", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

func TestContainerFilter(t *testing.T) {
	const arch = unix.AUDIT_ARCH_X86_64
	for _, c := range []struct {
		name     string
		nr       uintptr
		arg0     uint64
		docker   uint32
		tooljail uint32
	}{
		{"getppid", unix.SYS_GETPPID, 0, seccompAllow, seccompAllow},
		{"clone of a thread", unix.SYS_CLONE, unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND, seccompAllow, seccompAllow},
		{"clone CLONE_NEWUSER", unix.SYS_CLONE, unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID, seccompEPERM, seccompAllow},
		{"clone CLONE_NEWNET", unix.SYS_CLONE, unix.CLONE_NEWNET, seccompEPERM, seccompEPERM},
		{"clone CLONE_NEWNS, high bits", unix.SYS_CLONE, 1<<40 | unix.CLONE_NEWNS, seccompEPERM, seccompEPERM},
		{"clone3", unix.SYS_CLONE3, 0, seccompNoSys, seccompNoSys},
		{"unshare CLONE_NEWUSER", unix.SYS_UNSHARE, unix.CLONE_NEWUSER, seccompEPERM, seccompAllow},
		{"unshare CLONE_NEWNS", unix.SYS_UNSHARE, unix.CLONE_NEWNS, seccompEPERM, seccompEPERM},
		{"unshare 0", unix.SYS_UNSHARE, 0, seccompEPERM, seccompEPERM},
		{"mount", unix.SYS_MOUNT, 0, seccompEPERM, seccompAllow},
		{"move_mount", unix.SYS_MOVE_MOUNT, 0, seccompEPERM, seccompAllow},
		{"sethostname", unix.SYS_SETHOSTNAME, 0, seccompEPERM, seccompAllow},
		{"setns", unix.SYS_SETNS, 0, seccompEPERM, seccompEPERM},
		{"keyctl", unix.SYS_KEYCTL, 0, seccompEPERM, seccompEPERM},
		{"bpf", unix.SYS_BPF, 0, seccompEPERM, seccompEPERM},
		{"ptrace", unix.SYS_PTRACE, 0, seccompAllow, seccompAllow},
		{"landlock_create_ruleset", unix.SYS_LANDLOCK_CREATE_RULESET, 0, seccompAllow, seccompAllow},
		{"x32 getppid", x32Bit | unix.SYS_GETPPID, 0, seccompEPERM, seccompEPERM},
	} {
		for mode, want := range map[string]uint32{"docker": c.docker, "tooljail": c.tooljail} {
			prog, err := containerFilter(mode, arch)
			if err != nil {
				t.Fatal(err)
			}
			if got := runFilter(t, prog, arch, int(c.nr), c.arg0); got != want {
				t.Errorf("%s, %s: %#x, want %#x", mode, c.name, got, want)
			}
			if got := runFilter(t, prog, unix.AUDIT_ARCH_I386, int(c.nr), c.arg0); got != seccompEPERM {
				t.Errorf("%s, %s of i386: %#x, want EPERM", mode, c.name, got)
			}
		}
	}
	if _, err := containerFilter("docker", 0); err == nil {
		t.Error("a filter for an unknown architecture")
	}
}

// profile is the part of docs/containers/seccomp.json this test reads.
type profile struct {
	Syscalls []struct {
		Names  []string `json:"names"`
		Action string   `json:"action"`
		Args   []struct {
			Value, ValueTwo uint64
			Op              string
		} `json:"args"`
		Comment string `json:"comment"`
	} `json:"syscalls"`
}

// The filters are the profile docs/containers.md ships: docker is moby's
// part of it, tooljail the whole. The profile itself is compiled and
// tried with libseccomp in the jail package's tests.
func TestContainerFilterMatchesProfile(t *testing.T) {
	b, err := os.ReadFile("../../docs/containers/seccomp.json")
	if err != nil {
		t.Fatal(err)
	}
	var p profile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	mobyAllows := map[string]bool{}
	var added []string
	var cloneMask uint64
	for _, r := range p.Syscalls {
		if strings.HasPrefix(r.Comment, "tooljail:") {
			added = append(added, r.Names...)
			continue
		}
		if r.Action != "SCMP_ACT_ALLOW" {
			continue
		}
		for _, n := range r.Names {
			mobyAllows[n] = true
			if n == "clone" && len(r.Args) == 1 && r.Args[0].Op == "SCMP_CMP_MASKED_EQ" {
				cloneMask = r.Args[0].Value
			}
		}
	}
	for name := range dockerDenied {
		if mobyAllows[name] {
			t.Errorf("the docker filter refuses %s, which moby's profile allows", name)
		}
	}
	for name := range mountCalls {
		if mobyAllows[name] {
			t.Errorf("the docker filter refuses %s, which moby's profile allows", name)
		}
	}
	if mobyAllows["unshare"] || mobyAllows["setns"] {
		t.Error("moby's profile allows unshare or setns to a container without CAP_SYS_ADMIN")
	}
	if cloneMask != cloneNamespaces {
		t.Errorf("moby's clone mask is %#x, the filter's %#x", cloneMask, cloneNamespaces)
	}
	want := []string{"clone", "unshare"}
	for name := range mountCalls {
		want = append(want, name)
	}
	slices.Sort(want)
	slices.Sort(added)
	if !slices.Equal(added, want) {
		t.Errorf("tooljail's rules in the profile allow %q; the tooljail filter %q", added, want)
	}
}

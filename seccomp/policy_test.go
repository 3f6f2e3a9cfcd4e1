package seccomp

import (
	"strings"
	"testing"

	libseccomp "github.com/seccomp/libseccomp-golang"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p       Policy
		wantErr []string // substrings; nil = valid
	}{
		{Policy{}, nil},
		{Policy{Allow: []string{"@ptrace", "bpf"}, Deny: []string{"@network", "mkdir"}}, nil},
		{Policy{Allow: []string{"@default"}}, nil},
		{Policy{Allow: []string{"mkdri"}}, []string{`allow: unknown syscall "mkdri"`, "mkdir"}},
		{Policy{Deny: []string{"@mounts"}}, []string{`deny: unknown group "@mounts"`, "@mount"}},
		{Policy{Allow: []string{"@nothing-like-it"}}, []string{`unknown group "@nothing-like-it"`, "@mount"}},
		{Policy{Deny: []string{"sendmsg"}}, []string{`deny "sendmsg"`, "needed by the jail"}},
		{Policy{Deny: []string{"@basic-io"}}, []string{`deny "@basic-io"`, "(in @basic-io)"}},
	} {
		err := Validate(tc.p)
		if tc.wantErr == nil {
			if err != nil {
				t.Errorf("Validate(%+v) = %v", tc.p, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("Validate(%+v) accepted, want an error with %q", tc.p, tc.wantErr)
			continue
		}
		for _, s := range tc.wantErr {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Validate(%+v) = %q, want it to contain %q", tc.p, err, s)
			}
		}
	}
}

func TestResolve(t *testing.T) {
	r, err := resolve(Policy{Allow: []string{"@namespaces", "ptrace"}, Deny: []string{"socket", "ptrace"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"clone3", "setns", "read"} {
		if !contains(r.allow, n) {
			t.Errorf("%s not allowed", n)
		}
	}
	for _, n := range []string{"socket", "ptrace", "mount"} {
		if contains(r.allow, n) {
			t.Errorf("%s allowed", n)
		}
	}
	if !r.lifted["clone"] || !r.lifted["unshare"] || r.lifted["personality"] {
		t.Errorf("lifted = %v, want clone and unshare only", r.lifted)
	}
}

// Every syscall libseccomp knows on this architecture must be in exactly
// one group, so that none is allowed or denied by accident.
func TestGroupsCoverLibseccompTable(t *testing.T) {
	var missing []string
	for nr := 0; nr < 1024; nr++ {
		name, err := libseccomp.ScmpSyscall(nr).GetName()
		if err != nil {
			continue
		}
		if _, ok := syscallGroup()[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("syscalls in no group: %v", missing)
	}
	for g, names := range groups() {
		if !strings.HasPrefix(g, "@") {
			t.Errorf("group %q lacks the @", g)
		}
		if len(names) == 0 {
			t.Errorf("group %s is empty", g)
		}
	}
}

func TestRequiredAreAllowedByDefault(t *testing.T) {
	r, err := resolve(Policy{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range required {
		if !contains(r.allow, n) {
			t.Errorf("required syscall %s is not in the default allowlist", n)
		}
	}
	for n := range restricted() {
		if !contains(r.allow, n) {
			t.Errorf("restricted syscall %s is not in the default allowlist", n)
		}
	}
}

// Only what stage 2 needs after loading the filter is required: the Go
// runtime's calls may be denied by a profile, stage 2's may not.
func TestDenyRequired(t *testing.T) {
	for _, n := range []string{"futex", "mmap", "clone", "nanosleep", "rt_sigaction", "getpid"} {
		r, err := resolve(Policy{Deny: []string{n}})
		if err != nil {
			t.Errorf("deny %s: %v, want it allowed (stage 2 does not need it)", n, err)
			continue
		}
		if contains(r.allow, n) {
			t.Errorf("deny %s: still allowed", n)
		}
	}
	for _, n := range required {
		if _, err := resolve(Policy{Deny: []string{n}}); err == nil || !strings.Contains(err.Error(), "needed by the jail itself") {
			t.Errorf("deny %s: %v, want the needed-by-the-jail error", n, err)
		}
	}
}

func TestGroupsIsACopy(t *testing.T) {
	g := Groups()
	if len(g["@mount"]) == 0 || len(g["@default"]) == 0 {
		t.Fatalf("Groups() = %v", g)
	}
	g["@mount"][0] = "read"
	if Groups()["@mount"][0] == "read" {
		t.Error("Groups() returns the package's own slices")
	}
}

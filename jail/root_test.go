package jail

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/hostprobe"
)

func TestValidateRoot(t *testing.T) {
	inRoot := Mount{Kind: MountBind, Source: "/usr", Dest: "/usr", Exec: true, InRoot: true}
	for _, tc := range []struct {
		name string
		edit func(s *Spec)
		want string // "" for valid
	}{
		{"a root and a bind from it", func(s *Spec) { s.Root = "/srv/rootfs"; s.Mounts = []Mount{inRoot} }, ""},
		{"a root and no bind from it", func(s *Spec) { s.Root = "/srv/rootfs" }, ""},
		{"a relative root", func(s *Spec) { s.Root = "rootfs" }, "clean absolute"},
		{"an unclean root", func(s *Spec) { s.Root = "/srv/../rootfs" }, "clean absolute"},
		{"a root with a NUL", func(s *Spec) { s.Root = "/srv/x\x00" }, "clean absolute"},
		{"a bind from no root", func(s *Spec) { s.Mounts = []Mount{inRoot} }, "none is given"},
		{"a writable bind from the root", func(s *Spec) {
			s.Root = "/srv/rootfs"
			s.Mounts = []Mount{{Kind: MountBind, Source: "/var", Dest: "/var", Writable: true, InRoot: true}}
		}, "read-only only"},
		{"a tmpfs from the root", func(s *Spec) {
			s.Root = "/srv/rootfs"
			s.Mounts = []Mount{{Kind: MountTmpfs, Dest: "/var", InRoot: true}}
		}, "only a bind"},
	} {
		s := validSpec()
		tc.edit(s)
		err := s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Without namespaces nothing can be mounted: a root directory is refused.
func TestRootNeedsNamespaces(t *testing.T) {
	s := validSpec()
	s.Root = "/srv/rootfs"
	s.AllowDegraded = []string{LayerNamespaces}
	s.Landlock = &LandlockSpec{}
	h := hostprobe.Host{}
	h.Landlock.ABI = 4
	if _, err := makePlan(s, h); err == nil || !strings.Contains(err.Error(), "root directory /srv/rootfs can only be shown in a mount namespace") {
		t.Errorf("plan without namespaces: %v", err)
	}
}

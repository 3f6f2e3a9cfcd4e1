package jail

import (
	"reflect"
	"strings"
	"testing"
)

func TestPlanMounts(t *testing.T) {
	s := &Spec{Net: NetHost, Mounts: []Mount{
		{Kind: MountMask, Dest: "/w/secrets/key"},
		{Kind: MountMask, Dest: "/w/secrets"},
		{Kind: MountBind, Source: "/w", Dest: "/w", Writable: true},
		{Kind: MountMask, Dest: "/w/secretsfile"},
	}}
	var got []string
	for _, m := range planMounts(s) {
		got = append(got, string(m.Kind)+" "+m.Dest)
	}
	want := []string{"bind /w", "bind /etc/resolv.conf", "mask /w/secrets", "mask /w/secretsfile"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("planMounts = %v, want %v", got, want)
	}
	s.Mounts = append(s.Mounts, Mount{Kind: MountBind, Source: "/x/resolv.conf", Dest: "/etc/resolv.conf"})
	n := 0
	for _, m := range planMounts(s) {
		if m.Dest == "/etc/resolv.conf" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a Spec that binds /etc/resolv.conf itself gets %d binds there", n)
	}
}

// The report says Landlock restricts pathname sockets exactly from the ABI
// that handles resolve_unix, and not in a read-only bind that a writable
// mount's rule reaches.
func TestUnixSockets(t *testing.T) {
	for abi, want := range map[int]string{0: "not restricted", 7: "not restricted", 8: "not restricted", 9: "landlock", 10: "landlock"} {
		if got := unixSockets(abi, nil); !strings.HasPrefix(got, want) {
			t.Errorf("unixSockets(%d) = %q, want %q...", abi, got, want)
		}
	}
	ro := Mount{Kind: MountBind, Source: "/srv/data", Dest: "/tmp/data"}
	for _, c := range []struct {
		name   string
		mounts []Mount
		want   string
	}{
		{"ro bind alone", []Mount{{Kind: MountBind, Source: "/srv/data", Dest: "/data"}}, "landlock"},
		{"ro bind in a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tmp", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind in the workdir", []Mount{{Kind: MountBind, Source: "/w", Dest: "/tmp", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind over a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tmp/data", Writable: true}, ro}, "not restricted in /tmp/data"},
		{"ro bind beside a tmpfs", []Mount{{Kind: MountTmpfs, Dest: "/tm", Writable: true}, ro}, "landlock"},
		{"ro bind in a read-only bind", []Mount{{Kind: MountBind, Source: "/x", Dest: "/tmp"}, ro}, "landlock"},
	} {
		if got := unixSockets(9, c.mounts); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q...", c.name, got, c.want)
		}
	}
}

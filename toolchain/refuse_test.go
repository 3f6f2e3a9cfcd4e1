package toolchain

import (
	"strings"
	"testing"
)

func TestRefusal(t *testing.T) {
	// /srv/w/ as /etc/passwd may write it (hostpath.HomeDirs keeps it so).
	homes := []string{"/home/u", "/root", "/var/lib/svc", "/srv/w/"}
	for _, c := range []struct {
		prefix string
		has    []string
		want   string // a part of the reason, "" for none
	}{
		{prefix: "/home/u/.pyenv/versions/3.12.1", want: ""},
		{prefix: "/", want: "root directory"},
		{prefix: "/opt", want: "top-level directory"},
		{prefix: "/home/u", want: "is the home directory /home/u"},
		{prefix: "/home", want: "top-level"},
		{prefix: "/var/lib", want: "holds the home directory /var/lib/svc"},
		{prefix: "/srv/w", want: "is the home directory /srv/w"},
		{prefix: "/root", want: "top-level"},
		{prefix: "/home/u/.ssh/tools", want: "lies in /home/u/.ssh"},
		{prefix: "/home/u/.config/gh/bin", want: "lies in /home/u/.config/gh"},
		{prefix: "/home/u/.local/share/keyrings/x", want: "lies in /home/u/.local/share/keyrings"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.ssh"}, want: "holds /home/u/tc/.ssh"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.aws"}, want: "holds /home/u/tc/.aws"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.netrc"}, want: "holds /home/u/tc/.netrc"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.config/gh"}, want: "holds /home/u/tc/.config/gh"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.config/other"}, want: ""},
		{prefix: "/home/u/.config", has: []string{"/home/u/.config/gh"}, want: "holds /home/u/.config/gh"},
		{prefix: "/home/u/.local", has: []string{"/home/u/.local/share/keyrings"}, want: "holds /home/u/.local/share/keyrings"},
		{prefix: "/home/u/.local/share", has: []string{"/home/u/.local/share/keyrings"}, want: "holds /home/u/.local/share/keyrings"},
		{prefix: "/home/u/.cargo", has: []string{"/home/u/.cargo/credentials.toml"}, want: "holds /home/u/.cargo/credentials.toml"},
		{prefix: "/home/u/.aws-tools", want: ""},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.npmrc"}, want: "holds /home/u/tc/.npmrc"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/.git-credentials"}, want: "holds /home/u/tc/.git-credentials"},
		{prefix: "/home/u/tc", has: []string{"/home/u/tc/credentials"}, want: "holds /home/u/tc/credentials"},
	} {
		has := func(p string) bool {
			for _, h := range c.has {
				if h == p {
					return true
				}
			}
			return false
		}
		got := refusal(homes, c.prefix, has)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s (has %v): %q, want %q", c.prefix, c.has, got, c.want)
		}
		if got != "" && !strings.Contains(got, "--toolchain PATH") {
			t.Errorf("%s: the reason says nothing of what to do: %q", c.prefix, got)
		}
	}
}

func TestPermits(t *testing.T) {
	p := Peer{UID: 1000, GIDs: []uint32{1000, 27}}
	for _, c := range []struct {
		peer     Peer
		perm     uint32
		uid, gid uint32
		want     uint32
		ok       bool
	}{
		{p, 0o755, 0, 0, wantExec, true},
		{p, 0o700, 0, 0, wantExec, false},
		{p, 0o700, 1000, 1000, wantRead | wantExec, true},
		{p, 0o070, 1000, 1000, wantRead | wantExec, false}, // the owner class decides for the owner
		{p, 0o750, 0, 27, wantRead | wantExec, true},
		{p, 0o710, 0, 27, wantRead | wantExec, false},
		{p, 0o711, 0, 0, wantExec, true},
		{p, 0o711, 0, 0, wantRead | wantExec, false},
		{Peer{UID: 0}, 0o000, 5, 5, wantRead | wantExec, true},
	} {
		if got := permits(c.peer, fsMode(c.perm), c.uid, c.gid, c.want); got != c.ok {
			t.Errorf("%+v mode %#o owner %d:%d want %d: %v", c.peer, c.perm, c.uid, c.gid, c.want, got)
		}
	}
}

package profiles

import (
	"errors"
	"os/user"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
)

func TestCheckHostUser(t *testing.T) {
	cases := []struct {
		v    string
		frag string // "" = accepted
	}{
		{"", ""},
		{"build", ""},
		{"_svc-ci.1$", ""},
		{"1000", ""},
		{"1000:1000", ""},
		{"4294967294:4294967294", ""},
		{"root", "never runs as the host's root"},
		{"0", "uid 0 is root's"},
		{"00", "uid 0 is root's"},
		{"0:1000", "uid 0 is root's"},
		{"1000:0", "gid 0 is root's"},
		{"4294967295", "out of range"},
		{"99999999999", "out of range"},
		{"-1", "not a user name"},
		{"1000:", `gid "" is not a number`},
		{":1000", `uid "" is not a number`},
		{"build:1000", `uid "build" is not a number`},
		{"1000:1000:1", `gid "1000:1" is not a number`},
		{"9lives", "not a user name"},
		{"a b", "not a user name"},
		{"a/b", "not a user name"},
	}
	for _, c := range cases {
		err := checkHostUser(c.v)
		switch {
		case c.frag == "" && err != nil:
			t.Errorf("checkHostUser(%q) = %v, want it accepted", c.v, err)
		case c.frag != "" && (err == nil || !strings.Contains(err.Error(), c.frag)):
			t.Errorf("checkHostUser(%q) = %v, want an error containing %q", c.v, err, c.frag)
		case c.frag != "" && !strings.Contains(err.Error(), "UID:GID"):
			t.Errorf("checkHostUser(%q) = %v: does not say what to give", c.v, err)
		}
	}
}

// fakeDB is a password database of a few entries.
func fakeDB() userDB {
	entries := []user.User{
		{Username: "build", Uid: "1500", Gid: "1600"},
		{Username: "toor", Uid: "0", Gid: "0"},
		{Username: "wheelie", Uid: "1700", Gid: "0"},
		{Username: "broken", Uid: "x", Gid: "1"},
	}
	return userDB{
		byName: func(name string) (*user.User, error) {
			if name == "flaky" {
				return nil, errors.New("passwd unreadable")
			}
			for i := range entries {
				if entries[i].Username == name {
					return &entries[i], nil
				}
			}
			return nil, user.UnknownUserError(name)
		},
		byID: func(uid string) (*user.User, error) {
			for i := range entries {
				if entries[i].Uid == uid {
					return &entries[i], nil
				}
			}
			return nil, user.UnknownUserIdError(0)
		},
	}
}

func TestResolveHostUser(t *testing.T) {
	cases := []struct {
		v    string
		want *jail.HostID
		frag string
	}{
		{"", nil, ""},
		{"build", &jail.HostID{UID: 1500, GID: 1600}, ""},
		{"1500", &jail.HostID{UID: 1500, GID: 1600}, ""},              // the entry's group
		{"200000", &jail.HostID{UID: 200000, GID: 200000}, ""},        // no entry: gid = uid
		{"1500:42", &jail.HostID{UID: 1500, GID: 42}, ""},             // as given
		{"300000:300001", &jail.HostID{UID: 300000, GID: 300001}, ""}, // no lookup
		{"nosuch", nil, "no such user in the host's password database"},
		{"toor", nil, "is uid 0"},
		{"wheelie", nil, "root group (gid 0)"},
		{"1700", nil, "root group (gid 0)"},
		{"broken", nil, "not a number"},
		{"flaky", nil, "passwd unreadable"},
		{"root", nil, "never runs as the host's root"},
		{"0:5", nil, "uid 0"},
	}
	for _, c := range cases {
		got, err := resolveHostUser(c.v, fakeDB())
		if c.frag != "" {
			if err == nil || !strings.Contains(err.Error(), c.frag) {
				t.Errorf("resolveHostUser(%q) = %+v, %v; want an error containing %q", c.v, got, err, c.frag)
			}
			continue
		}
		if err != nil || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
			t.Errorf("resolveHostUser(%q) = %+v, %v; want %+v", c.v, got, err, c.want)
		}
	}
}

// What host_user accepts, jail.Spec accepts: the two refusals of root
// agree.
func TestHostUserPassesSpecValidate(t *testing.T) {
	for _, v := range []string{"1", "1:1", "4294967294:4294967294", "200000"} {
		id, err := resolveHostUser(v, fakeDB())
		if err != nil {
			t.Fatal(err)
		}
		s := jail.Spec{Args: []string{"true"}, Dir: "/tmp", Net: jail.NetNone, OnViolation: jail.ViolationDeny, HostUser: id}
		if err := s.Validate(); err != nil {
			t.Errorf("host_user %q: %+v refused by the jail: %v", v, id, err)
		}
	}
}

package profiles

import (
	"errors"
	"fmt"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tooljail/tooljail/jail"
)

// userNamePattern is what useradd accepts as a name (and what can be
// told apart from a number).
var userNamePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*\$?$`)
})

// hostUserHelp ends every host_user error: what the value may be.
var hostUserHelp = fmt.Sprintf(`want a user name, UID or UID:GID other than root, or "" to let the jail choose (the workdir's owner unless that is root, else %d:%d)`,
	jail.DefaultHostUser.UID, jail.DefaultHostUser.GID)

// checkHostUser checks the form of a host_user value without touching the
// host: names are looked up only when the Spec is built. Root is refused
// here already, by name and by number, so that the error names the key
// (the jail refuses it again, for Specs built by hand).
func checkHostUser(v string) error {
	if v == "" {
		return nil
	}
	if uid, gid, ok := strings.Cut(v, ":"); ok {
		if _, err := hostID(uid); err != nil {
			return fmt.Errorf("%q: uid %w; %s", v, err, hostUserHelp)
		}
		if _, err := hostID(gid); err != nil {
			return fmt.Errorf("%q: gid %w; %s", v, err, hostUserHelp)
		}
		return nil
	}
	if isDigits(v) {
		if _, err := hostID(v); err != nil {
			return fmt.Errorf("%q: uid %w; %s", v, err, hostUserHelp)
		}
		return nil
	}
	if v == "root" {
		return fmt.Errorf("%q: the jail never runs as the host's root; %s", v, hostUserHelp)
	}
	if !userNamePattern().MatchString(v) || len(v) > 256 {
		return fmt.Errorf("%q: not a user name; %s", v, hostUserHelp)
	}
	return nil
}

// hostID parses one id: decimal, not root's 0, and not (uid_t)-1, which
// the kernel reads as "no change".
func hostID(s string) (int, error) {
	if !isDigits(s) {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 1<<32-1 {
		return 0, fmt.Errorf("%s is out of range", s)
	}
	if n == 0 {
		return 0, errors.New("0 is root's: the jail never runs as the host's root")
	}
	return int(n), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// userDB looks users up by name and by uid. The errors for a missing user
// are os/user's UnknownUserError and UnknownUserIdError.
type userDB struct {
	byName func(name string) (*user.User, error)
	byID   func(uid string) (*user.User, error)
}

// passwd is the host's password database: tooljail is built with
// osusergo, so os/user reads /etc/passwd (no NSS modules in the process).
var passwd = userDB{byName: user.Lookup, byID: user.LookupId}

// resolveHostUser turns a host_user value into the jail's HostID: nil for
// "". A name takes its uid and primary group from db; a bare UID takes the
// primary group of its entry when it has one, else the same number as gid
// (a dedicated uid that owns nothing needs no entry).
func resolveHostUser(v string, db userDB) (*jail.HostID, error) {
	if err := checkHostUser(v); err != nil || v == "" {
		return nil, err
	}
	if uid, gid, ok := strings.Cut(v, ":"); ok {
		u, _ := hostID(uid) // checked above
		g, _ := hostID(gid)
		return &jail.HostID{UID: u, GID: g}, nil
	}
	if isDigits(v) {
		uid, _ := hostID(v)
		u, err := db.byID(v)
		var unknown user.UnknownUserIdError
		switch {
		case errors.As(err, &unknown):
			return &jail.HostID{UID: uid, GID: uid}, nil
		case err != nil:
			return nil, fmt.Errorf("%q: look up uid %s: %w", v, v, err)
		}
		return entryID(v, u)
	}
	u, err := db.byName(v)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("%q: no such user in the host's password database (/etc/passwd); create the user, or give UID or UID:GID", v)
		}
		return nil, fmt.Errorf("%q: look up user: %w", v, err)
	}
	return entryID(v, u)
}

// entryID is the uid and primary gid of a password database entry, which
// may not be root's.
func entryID(v string, u *user.User) (*jail.HostID, error) {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("%q: uid %q in the password database is not a number", v, u.Uid)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("%q: gid %q in the password database is not a number", v, u.Gid)
	}
	if uid == 0 {
		return nil, fmt.Errorf("%q is uid 0: the jail never runs as the host's root; %s", v, hostUserHelp)
	}
	if gid == 0 {
		return nil, fmt.Errorf("%q has the root group (gid 0) as its primary group: the jail never runs with it; give UID:GID with another group, e.g. %d:%d", v, uid, uid)
	}
	return &jail.HostID{UID: uid, GID: gid}, nil
}

// ParseHostUser resolves a host_user value (a user name, UID or UID:GID;
// "" gives nil: the jail's own rule) against the host's password database.
// Root is refused.
func ParseHostUser(v string) (*jail.HostID, error) {
	return resolveHostUser(v, passwd)
}

// SetHostUser sets host_user (as --host-user does) after checking the
// value, names looked up in the host's password database.
func (p *Profile) SetHostUser(v string) error {
	if _, err := ParseHostUser(v); err != nil {
		return &KeyError{Key: "host_user", Err: err}
	}
	p.HostUser = &v
	return nil
}

package seccomp

import (
	"fmt"
	"sort"
	"strings"

	libseccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// Policy is what a run asks of the syscall filter, on top of the built-in
// default allowlist (the groups listed under "@default" in Groups).
//
// The filter is (default ∪ Allow) − Deny; a name in both is denied. Some
// allowed calls carry argument checks: clone and unshare without CLONE_NEW*
// flags, socket for AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE only,
// personality for the default personas only. Allowing such a call by name
// ("clone", "socket", ...), or "@namespaces" for clone and unshare, lifts
// its check. Some checks hold whatever the policy allows, even a call
// allowed by name:
//   - ioctl TIOCSTI/TIOCLINUX (terminal input injection) and IPPROTO_MPTCP
//     sockets (they bypass Landlock's TCP rules) are denied;
//   - no setuid or setgid bit can be created: chmod, fchmod, fchmodat and
//     fchmodat2 with S_ISUID or S_ISGID in the mode are denied, and so are
//     creat, mkdir, mkdirat, mknod, mknodat, and open and openat with
//     O_CREAT or O_TMPFILE, when their mode has those bits (like systemd's
//     RestrictSUIDSGID);
//   - the jail's init (PID 1) cannot be touched through the uid it shares
//     with the command: prlimit64 on any pid but 0, sched_setaffinity,
//     sched_setattr, sched_setparam and sched_setscheduler on pid 1, and
//     setpriority and ioprio_set on pid 1, process group 1 or any user,
//     are denied (setrlimit, pid 0 and the reads stay allowed);
//   - openat2 fails with ENOSYS, as on a kernel before 5.6 (its mode is in
//     memory the filter cannot read), so that callers fall back to openat;
//     like clone3's ENOSYS this is not a violation.
//
// A policy that denies one of these calls denies it with any arguments
// (openat2 stays ENOSYS).
type Policy struct {
	// Allow adds syscall names or "@group" names to the allowlist.
	Allow []string `json:"allow,omitempty"`
	// Deny removes syscall names or "@group" names from it.
	Deny []string `json:"deny,omitempty"`
	// DenySockets refuses socket(2) for these address families, whatever
	// Allow says: "unix" (AF_UNIX; socketpair stays allowed) and "inet"
	// (AF_INET and AF_INET6). The jail's mode without namespaces sets
	// them where the host's sockets would otherwise be in reach.
	DenySockets []string `json:"deny_sockets,omitempty"`
}

// socketFamilies are the names DenySockets takes.
var socketFamilies = map[string][]uint64{
	"unix": {unix.AF_UNIX},
	"inet": {unix.AF_INET, unix.AF_INET6},
}

// resolved is a policy expanded to syscall names.
type resolved struct {
	allow  []string        // sorted
	lifted map[string]bool // restricted names allowed without their argument check
	// noFamilies are the socket families socket(2) is refused for.
	noFamilies []uint64
}

// Validate checks that every name in p is a known syscall or group and
// that p does not deny a call the jail itself needs. It does not compile.
func Validate(p Policy) error {
	_, err := resolve(p)
	return err
}

func resolve(p Policy) (*resolved, error) {
	allow := make(map[string]bool)
	for _, g := range defaultAllow {
		for _, n := range groups()[g] {
			allow[n] = true
		}
	}
	lifted := make(map[string]bool)
	for _, entry := range p.Allow {
		names, err := expand(entry, "allow")
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			allow[n] = true
		}
		switch {
		case entry == "@namespaces":
			lifted["clone"], lifted["unshare"] = true, true
		case restricted()[entry] != nil:
			lifted[entry] = true
		}
	}
	isRequired := make(map[string]bool, len(required))
	for _, n := range required {
		isRequired[n] = true
	}
	for _, entry := range p.Deny {
		names, err := expand(entry, "deny")
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if isRequired[n] {
				how := ""
				if strings.HasPrefix(entry, "@") {
					how = fmt.Sprintf(" (in %s)", entry)
				}
				return nil, fmt.Errorf("seccomp: deny %q: %s%s is needed by the jail itself between loading the filter and exec; deny individual calls instead", entry, n, how)
			}
			delete(allow, n)
		}
	}
	r := &resolved{lifted: lifted}
	for _, name := range p.DenySockets {
		fams, ok := socketFamilies[name]
		if !ok {
			return nil, fmt.Errorf("seccomp: deny_sockets: unknown family %q (known: inet, unix)", name)
		}
		r.noFamilies = append(r.noFamilies, fams...)
	}
	for n := range allow {
		r.allow = append(r.allow, n)
	}
	sort.Strings(r.allow)
	return r, nil
}

// expand turns one policy entry into syscall names.
func expand(entry, field string) ([]string, error) {
	if strings.HasPrefix(entry, "@") {
		if entry == "@default" {
			var out []string
			for _, g := range defaultAllow {
				out = append(out, groups()[g]...)
			}
			return out, nil
		}
		if names, ok := groups()[entry]; ok {
			return names, nil
		}
		known := make([]string, 0, len(groups())+1)
		for g := range groups() {
			known = append(known, g)
		}
		known = append(known, "@default")
		return nil, unknownName(field, "group", entry, known)
	}
	if _, ok := syscallGroup()[entry]; ok {
		return []string{entry}, nil
	}
	// A syscall libseccomp knows but our table does not (a newer library
	// than this code): accept it, it is a real name.
	if _, err := libseccomp.GetSyscallFromName(entry); err == nil {
		return []string{entry}, nil
	}
	known := make([]string, 0, len(syscallGroup()))
	for n := range syscallGroup() {
		known = append(known, n)
	}
	return nil, unknownName(field, "syscall", entry, known)
}

func unknownName(field, what, name string, known []string) error {
	msg := fmt.Sprintf("seccomp: %s: unknown %s %q", field, what, name)
	if near := closeNames(name, known); len(near) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(near, ", "))
	} else if what == "group" {
		sort.Strings(known)
		msg += fmt.Sprintf(" (groups: %s)", strings.Join(known, ", "))
	}
	return fmt.Errorf("%s", msg)
}

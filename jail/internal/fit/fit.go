// Package fit says whether a call fits a jail built before it: a warm
// jail, built for a Spec before its command came (Warm: the same jail in
// everything but the arguments and environment, its workdir not replaced
// since), or a session, kept for many calls (SessionCall: only what a call
// may change differs). It also keeps the identities those checks compare
// (FileID, WorkdirID, ProtectedIDs). Package jail takes or refuses the
// jail on its answer; a call that does not fit runs cold, or is refused.
// It imports jail/spec, hostside and hostpath (identities) and initc (the
// size of a call), never jail.
package fit

import (
	"fmt"
	"reflect"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/hostside"
	"github.com/tooljail/tooljail/jail/internal/initc"
	"github.com/tooljail/tooljail/jail/spec"
)

// FileID is a file by identity: its device and inode.
type FileID struct{ Dev, Ino uint64 }

// Warm says why a warm jail prepared as have (its workdir source
// opened as dir) cannot run want, or "".
func Warm(have, want *spec.Spec, dir *FileID, size, n int) string {
	if size > initc.MaxCallBytes || n > initc.MaxCallStrings {
		return fmt.Sprintf("the command's arguments and environment take %d bytes in %d strings, more than %d or %d", size, n, initc.MaxCallBytes, initc.MaxCallStrings)
	}
	if !SameJail(have, want) {
		return "the Spec differs in more than its arguments and environment"
	}
	if dir != nil {
		var st unix.Stat_t
		m := workdirMount(want.Mounts, want.Dir)
		if m == nil || unix.Stat(m.Source, &st) != nil || (FileID{st.Dev, st.Ino}) != *dir {
			return "the workdir was replaced since the jail was built"
		}
	}
	return ""
}

// SameJail says whether a and b make the same jail: equal in everything
// but Args and Env (and EnvDropped, which is about Env), and the same
// trusted files (by identity: they are open files).
func SameJail(a, b *spec.Spec) bool {
	if !slices.Equal(a.Trusted, b.Trusted) {
		return false
	}
	x, y := *a, *b
	x.Args, y.Args, x.Env, y.Env, x.Trusted, y.Trusted = nil, nil, nil, nil, nil, nil
	x.EnvDropped, y.EnvDropped = nil, nil
	return reflect.DeepEqual(x, y)
}

// workdirMount is the bind whose destination is dir (the workdir,
// read-write or read-only), or nil.
func workdirMount(mounts []spec.Mount, dir string) *spec.Mount {
	for i := range mounts {
		if mounts[i].Kind == spec.MountBind && mounts[i].Dest == dir {
			return &mounts[i]
		}
	}
	return nil
}

// WorkdirID is the identity of the workdir bind's source as opened for
// the run, or nil.
func WorkdirID(mounts []spec.Mount, srcs []hostside.Source, dir string) *FileID {
	for i, m := range mounts {
		if m.Kind == spec.MountBind && m.Dest == dir && i < len(srcs) && srcs[i].Obj != nil {
			st := srcs[i].Obj.Stat
			return &FileID{st.Dev, st.Ino}
		}
	}
	return nil
}

// ProtectedIDs pairs each protected destination with its object's identity.
func ProtectedIDs(dests []string, objs []*hostpath.Object) []string {
	out := make([]string, 0, len(dests))
	for i, d := range dests {
		if i < len(objs) {
			id := objs[i].ID()
			out = append(out, fmt.Sprintf("%s %d:%d", d, id.Dev, id.Ino))
		}
	}
	sort.Strings(out)
	return out
}

// SessionCall says why call cannot be a call of a session started
// with base, or "": a call may change only its arguments, environment,
// working directory, timeout and output limit; everything else (the
// binds, the network, the other limits, the identity) is the session's.
func SessionCall(base, call *spec.Spec) string {
	b, c := *base, *call
	b.Args, c.Args = nil, nil
	b.Env, c.Env = nil, nil
	b.EnvDropped, c.EnvDropped = nil, nil
	b.Dir, c.Dir = "", ""
	b.Limits.Timeout, c.Limits.Timeout = 0, 0
	b.Limits.OutputLimit, c.Limits.OutputLimit = 0, 0
	if !reflect.DeepEqual(b.Limits, c.Limits) {
		return "limits other than the timeout and the output limit are the session's"
	}
	if !reflect.DeepEqual(b, c) {
		return "only the arguments, environment, working directory, timeout and output limit can differ from the session's Spec"
	}
	return ""
}

// Package seccomp builds the jail's syscall allowlist with libseccomp, loads
// it in the jail as the last step before execve, and answers seccomp user
// notifications in the supervisor so that every denied call is reported by
// name.
//
// The pieces run in different processes:
//
//	supervisor (host, per run)          jail init, then its stage 2 child
//	  Probe()                             filter, flags := ThreadArgs(prog)
//	  prog := Compile(policy, notify)     stage 2 (C): caps, no_new_privs,
//	  ... send prog to the jail ...  -->    Landlock, l = seccomp(filter, flags)
//	                                 <--    sendmsg(sock, ready, l); close(l)
//	  m := NewMonitor(l, action, kill)      close_range(3, ~0, CLOEXEC); execve
//	  ... run ends ...
//	  violations := m.Stop()
//
// Compile uses libseccomp (cgo) and caches its result; the shipped
// profiles' filters are compiled into the binary (builtin_filters.go, from
// `make generate`), so their runs need neither libseccomp nor a disk
// cache. The jail loads the
// program with its own seccomp(2) call (jail/stage2.c); Install is the same
// for a Go process (every thread), used by tests and the benchmarks, with
// SendListener and RecvListener.
package seccomp

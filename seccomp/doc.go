// Package seccomp builds the jail's syscall allowlist with libseccomp and
// answers seccomp user notifications in the supervisor, so that every
// denied call is reported by name. The jail loads the filter itself, as the
// last step before execve.
//
// The pieces run in different processes:
//
//	supervisor (host, per run)              jail init, then its stage 2 child (C)
//	  Probe()
//	  prog := CompileDir(policy, notify, dir)
//	  insns, flags := ThreadArgs(prog)
//	  ... plan with insns, flags ...   -->    caps, no_new_privs, Landlock,
//	                                            l = seccomp(SET_MODE_FILTER, flags, insns)
//	                                   <--    sendmsg(sock, ready, l); close(l)
//	  m := NewMonitor(l, opts)              close_range(3, ~0, CLOEXEC); execve
//	  ... run ends ...
//	  violations := m.Stop()
//
// CompileDir uses libseccomp (cgo) and caches its result in memory and in
// the directory dir the jail opened (DefaultCacheDir); the shipped
// profiles' filters are compiled into the binary (builtin_filters.go, from
// `make generate`), so their runs need neither libseccomp nor a disk
// cache. The jail's stage 2 (jail/internal/initc/stage2.c) loads the program with its own
// seccomp(2) call and hands the listener to the supervisor over the jail's
// socket (jail/). This package's tests do the same in a re-executed Go
// child (main_test.go), on every thread of it.
package seccomp

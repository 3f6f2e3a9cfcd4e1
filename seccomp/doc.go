// Package seccomp builds the jail's syscall allowlist with libseccomp, loads
// it in the jail as the last step before execve, and answers seccomp user
// notifications in the supervisor so that every denied call is reported by
// name.
//
// The pieces run in different processes:
//
//	supervisor (host, per run)          jail stage 2 (last steps before execve)
//	  Probe()                             rlimits, caps, no_new_privs, Landlock
//	  prog := Compile(policy, notify)     l := Install(prog)
//	  ... send prog to the jail ...  -->  SendListener(sock, l); l.Close()
//	  l := RecvListener(sock)        <--  close_range(3, ~0, CLOEXEC); execve
//	  m := NewMonitor(l, action, kill)
//	  ... run ends ...
//	  violations := m.Stop()
//
// Compile uses libseccomp (cgo) and caches its result; Install only makes
// the seccomp(2) system call.
package seccomp

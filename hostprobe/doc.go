// Package hostprobe says what this host and user can enforce: the facts
// of `tooljail check` (each layer, a real user namespace tried in a
// re-execution of the program's own binary) and, from inside a container,
// which container it is and what it refuses, with the fix for each
// engine (Docker, Podman, Kubernetes).
//
// It owns the probe (Probe, cached once per process), the check (Check),
// the namespace trial a run without namespaces relies on
// (NamespacesFailure) and the layer names check and jail.Spec share. It
// only reads the host and decides; it runs nothing of a jail. It may
// import cgroup, landlock, seccomp and internal packages; jail imports
// it, never the other way.
package hostprobe

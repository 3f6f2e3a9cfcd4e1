// Package hostprotect finds and opens, below the source of one writable
// bind, the paths a run must not be able to change (jail.Spec.Protect):
// files that run on the host later (git hooks and config, shell rc files,
// editor and agent configuration), which the jail binds read-only over
// themselves, as it does trusted files. Only names are looked at, never a
// walk: the bind's root, the repositories at its first two levels, their
// submodules' git directories and a core.hooksPath. What does not exist
// when the run starts cannot be protected (a mount needs a mount point,
// and tooljail creates nothing on the host); what git needs to find a
// repository's hooks must exist.
//
// It owns these rules and nothing of a run: it reads through descriptors
// package hostpath opened and may import hostpath and the standard
// library; jail calls Open for each writable bind.
package hostprotect

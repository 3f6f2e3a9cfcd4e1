package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// defaultSpec is what `tooljail run -- /bin/true` would run from wd: the
// default profile through profiles.Spec, as cmd/tooljail/run.go does.
func defaultSpec(wd string, args ...string) (*jail.Spec, error) {
	p, err := profiles.Load("default")
	if err != nil {
		return nil, fmt.Errorf("load the default profile: %w", err)
	}
	s, err := p.Spec(profiles.Request{Args: args, Cwd: wd, Environ: os.Environ()})
	if err != nil {
		return nil, fmt.Errorf("default profile spec for %s: %w", wd, err)
	}
	return s, nil
}

// layer is one step of the per-layer start-up chart.
type layer struct {
	label, what string
	r           runner
}

// layers builds the start-up ladder: each step adds one layer to the one
// before. The jail-package steps run in this process (the jail forks its
// C init from it).
func layers(tooljail, wd string, bwrapArgv []string) ([]layer, error) {
	full, err := defaultSpec(wd, "/bin/true")
	if err != nil {
		return nil, err
	}
	repo := wd + "-repo"
	if err := repoWorkdir(repo); err != nil {
		return nil, err
	}
	cgroupOnly := full.Limits
	noCaps := full.Limits
	noCaps.Memory, noCaps.CPUs, noCaps.Pids = 0, 0, 0

	mounts := *full
	mounts.Landlock, mounts.Seccomp, mounts.Limits = nil, nil, noCaps
	withLandlock := mounts
	withLandlock.Landlock = full.Landlock
	withSeccomp := withLandlock
	withSeccomp.Seccomp = full.Seccomp
	withCgroup := withSeccomp
	withCgroup.Limits = cgroupOnly

	return []layer{
		{"bare fork+exec", "os/exec of /bin/true", execRunner("bare", []string{"/bin/true"}, wd, nil, nil)},
		{"namespaces only", "clone(user, mount, pid, net, ipc, uts) + uid map, exec /bin/true", nsRunner("namespaces")},
		{"+mounts", "jail package: default profile's mounts, init, stage 2; no Landlock, seccomp or caps", jailRunner("+mounts", &mounts)},
		{"+Landlock", "+ Landlock rules of the default profile", jailRunner("+landlock", &withLandlock)},
		{"+seccomp", "+ the default seccomp allowlist (user notification)", jailRunner("+seccomp", &withSeccomp)},
		{layerEmbedded, "+ memory/cpus/pids caps (1 GiB, 1 CPU, 256): the whole default Spec", jailRunner("+cgroup", &withCgroup)},
		{layerEmbeddedFresh, "the whole default Spec, each run's init building its root (`Cmd.FreshRoot`), as the CLI's does: no root template", jailRunnerFresh("+cgroup fresh", &withCgroup, true)},
		{"full (tooljail run)", "the CLI: `tooljail run -q -- /bin/true`", execRunner("tooljail run", []string{tooljail, "run", "-q", "--", "/bin/true"}, wd, nil, nil)},
		{"full, repository workdir", "the CLI in a workdir holding a git repository (hooks, config, info, two submodules, 16 top-level directories): filesystem.protect looks up and binds read-only what would run on the host later", execRunner("tooljail run repo", []string{tooljail, "run", "-q", "--", "/bin/true"}, repo, nil, nil)},
		{layerBwrap, "bwrap --unshare-all with the same mounts", execRunner("bwrap", bwrapArgv, wd, nil, nil)},
	}, nil
}

// bwrapArgv is `bwrap --unshare-all --die-with-parent` with the mounts of
// the default profile's Spec for wd: the system directories read-only
// (symlinks as symlinks), the same /etc entries, the same tmpfs mounts and
// sizes, the workdir read-write, a fresh /proc and /dev. What it lacks is
// what bwrap does not do: Landlock, seccomp, cgroup caps, the generated
// /etc/passwd etc.
func bwrapArgv(bwrap, wd string, cmd ...string) ([]string, error) {
	s, err := defaultSpec(wd, cmd...)
	if err != nil {
		return nil, err
	}
	hasSize := bwrapHasSize(bwrap)
	argv := []string{bwrap, "--unshare-all", "--die-with-parent"}
	for _, m := range s.Mounts {
		switch m.Kind {
		case jail.MountBind:
			fi, err := os.Lstat(m.Source)
			if err != nil {
				if m.Optional && os.IsNotExist(err) {
					continue
				}
				return nil, fmt.Errorf("bind source %s: %w", m.Source, err)
			}
			if m.KeepSymlink && fi.Mode()&os.ModeSymlink != 0 {
				target, err := os.Readlink(m.Source)
				if err != nil {
					return nil, err
				}
				argv = append(argv, "--symlink", target, m.Dest)
				continue
			}
			op := "--ro-bind"
			if m.Writable {
				op = "--bind"
			}
			argv = append(argv, op, m.Source, m.Dest)
		case jail.MountTmpfs:
			if hasSize && m.Size > 0 {
				argv = append(argv, "--size", strconv.FormatInt(m.Size, 10))
			}
			argv = append(argv, "--tmpfs", m.Dest)
		case jail.MountMask:
			return nil, fmt.Errorf("the default profile masks %s: no bwrap equivalent wired here", m.Dest)
		}
	}
	argv = append(argv, "--proc", "/proc", "--dev", "/dev", "--chdir", s.Dir, "--")
	return append(argv, cmd...), nil
}

// bwrapHasSize: --size (tmpfs size) exists from bubblewrap 0.5.
func bwrapHasSize(bwrap string) bool {
	out, _ := exec.Command(bwrap, "--help").CombinedOutput()
	return strings.Contains(string(out), "--size")
}

// repoWorkdir lays out dir as a project with a git repository, as git
// leaves one: what filesystem.protect looks at in a run's workdir.
func repoWorkdir(dir string) error {
	files := []string{".git/HEAD", ".git/config", ".git/hooks/pre-commit.sample", ".git/info/exclude",
		".git/objects/pack/x", ".git/refs/heads/main", ".gitmodules", ".gitignore", "README.md"}
	for _, m := range []string{"a", "b"} {
		files = append(files, ".git/modules/"+m+"/HEAD", ".git/modules/"+m+"/config", ".git/modules/"+m+"/hooks/x.sample", "third_party/"+m+"/.git")
	}
	for i := 0; i < 16; i++ {
		files = append(files, fmt.Sprintf("dir%02d/sub/file.go", i), fmt.Sprintf("dir%02d/file.go", i))
	}
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		data := ""
		switch {
		case strings.HasSuffix(f, "/.git"):
			data = "gitdir: ../../.git/modules/" + filepath.Base(filepath.Dir(f)) + "\n"
		case strings.HasSuffix(f, ".go"):
			// A Go file as a project has it: `gofmt -l .` in the tree
			// reads these too (bench/.work is ignored by git, not by it).
			data = "package " + filepath.Base(filepath.Dir(f)) + "\n"
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

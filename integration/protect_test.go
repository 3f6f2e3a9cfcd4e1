package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// protectRepo is a workdir laid out by hand as git leaves one (no git
// needed: the guests may not have it): a repository with hooks (one a
// symlink to a script in the project), config, info and core.hooksPath, a
// submodule's git directory, a nested repository, a worktree's .git file,
// and rc files. A value "-> TARGET" makes a symlink.
var protectRepo = map[string]string{
	".git/HEAD":                         "ref: refs/heads/main\n",
	".git/config":                       "[core]\n\tbare = false\n\thooksPath = myhooks\n",
	".git/hooks/pre-commit":             "#!/bin/sh\necho host hook\n",
	".git/info/exclude":                 "*.o\n",
	".git/objects/":                     "",
	".git/modules/m/HEAD":               "ref: refs/heads/main\n",
	".git/modules/m/config":             "[core]\n",
	".git/modules/m/hooks/post-merge":   "#!/bin/sh\n",
	".git/worktrees/wt/HEAD":            "ref: refs/heads/wt\n",
	".git/worktrees/wt/commondir":       "../..\n",
	".git/worktrees/wt/config.worktree": "[core]\n",
	"a/wt/.git":                         "gitdir: ../../.git/worktrees/wt\n",
	"sub/.git/HEAD":                     "ref: refs/heads/main\n",
	"sub/.git/config":                   "[core]\n",
	"sub/.git/hooks/pre-push":           "#!/bin/sh\n",
	"myhooks/pre-commit":                "#!/bin/sh\n",
	".git/hooks/post-merge":             "-> ../../scripts/hook", // a symlink: the script is what runs
	"scripts/hook":                      "#!/bin/sh\n",
	".envrc":                            "export X=1\n",
	".bashrc":                           "alias ls=ls\n",
	".vscode/settings.json":             "{}\n",
	"normal.txt":                        "text\n",
}

// What a run tries (name, shell), each that must fail with the default
// list and succeed with protect = [].
var protectAttempts = [][2]string{
	{"append-hook", "echo x >> .git/hooks/pre-commit"},
	{"new-hook", "echo x > .git/hooks/post-checkout"},
	{"rename-hooks", "mv .git/hooks .git/h2 && mv .git/h2 .git/hooks"},
	{"replace-config", "printf '[core]\\n' > .git/cfg.new && mv .git/cfg.new .git/config"},
	{"append-config", "echo x >> .git/config"},
	{"chmod-hook", "chmod 600 .git/hooks/pre-commit"},
	{"rm-hook", "rm .git/hooks/pre-commit"},
	{"info", "echo x >> .git/info/exclude"},
	{"envrc", "echo x >> .envrc"},
	{"rm-bashrc", "rm .bashrc"},
	{"vscode", "echo x > .vscode/tasks.json"},
	{"hookspath", "echo x > myhooks/post-checkout"},
	{"nested-hook", "echo x >> sub/.git/hooks/pre-push"},
	{"nested-config", "echo x >> sub/.git/config"},
	{"worktree-dotgit", "echo 'gitdir: /tmp' > a/wt/.git"},
	{"worktree-config", "echo x >> .git/worktrees/wt/config.worktree"},
	{"module-hook", "echo x > .git/modules/m/hooks/post-checkout"},
	{"module-config", "echo x >> .git/modules/m/config"},
	{"linked-hook", "echo x >> scripts/hook"},
}

// What git itself writes in a commit, and ordinary files: never protected.
var protectAllowed = [][2]string{
	{"normal", "echo x >> normal.txt"},
	{"new-file", "echo x > new.txt"},
	{"objects", "echo x > .git/objects/ab"},
	{"index", "echo x > .git/index"},
	{"head", "echo 'ref: refs/heads/x' > .git/HEAD"},
	{"sub-file", "echo x > sub/file"},
}

var protectWant = []string{
	".bashrc", ".envrc", ".git/config", ".git/hooks", ".git/info",
	".git/modules/m/config", ".git/modules/m/hooks", ".git/worktrees/wt/config.worktree",
	".vscode", "a/wt/.git", "myhooks", "scripts/hook", "sub/.git/config", "sub/.git/hooks",
}

func makeTree(t *testing.T, u *user, root string, files map[string]string) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(root, rel)
		dir := p
		if !strings.HasSuffix(rel, "/") {
			dir = filepath.Dir(p)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(data, "-> "); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		} else if !strings.HasSuffix(rel, "/") {
			writeFile(t, p, data, 0o755)
		}
	}
	// Owned by who the jail writes as: only the protection stops a write.
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Lchown(p, u.dirUID, u.dirGID)
		}
		return err
	})
}

// treeState is every file's path, mode and content hash under root.
func treeState(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		sum := ""
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			h := sha256.Sum256(b)
			sum = hex.EncodeToString(h[:8])
		}
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, info.Mode(), sum))
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func attemptScript(attempts ...[][2]string) string {
	var b strings.Builder
	for _, list := range attempts {
		for _, a := range list {
			fmt.Fprintf(&b, "if ( %s ) 2>/dev/null; then echo '%s ok'; else echo '%s no'; fi\n", a[1], a[0], a[0])
		}
	}
	return b.String()
}

func attemptResults(stdout string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if name, res, ok := strings.Cut(l, " "); ok {
			got[name] = res
		}
	}
	return got
}

// The paths of filesystem.protect in a writable bind are read-only in the
// jail: no hook can be added, changed, renamed away or replaced, no config
// rewritten, no rc file touched, in the repository, its submodules, a
// nested one, a worktree's gitdir and core.hooksPath; git's own writes and
// ordinary files go through; the host is unchanged; the report lists
// them. With protect = [] the same writes succeed (the control).
func TestProtectedPaths(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		makeTree(t, u, w, protectRepo)
		protected := func() map[string]string {
			st := map[string]string{}
			for _, p := range protectWant {
				st[p] = treeState(t, filepath.Join(w, p))
			}
			return st
		}
		before := protected()
		o := u.jailRun(t, w, run{}, "/bin/sh", "-c", attemptScript(protectAttempts, protectAllowed))
		if o.code != 0 {
			t.Fatalf("want exit 0\n%s", o)
		}
		got := attemptResults(o.stdout)
		for _, a := range protectAttempts {
			if got[a[0]] != "no" {
				t.Errorf("%s (%s): %q in the jail, want it refused", a[0], a[1], got[a[0]])
			}
		}
		for _, a := range protectAllowed {
			if got[a[0]] != "ok" {
				t.Errorf("%s (%s): %q in the jail, want it allowed", a[0], a[1], got[a[0]])
			}
		}
		after := protected()
		for _, p := range protectWant {
			if before[p] != after[p] {
				t.Errorf("%s changed on the host:\n%s\nnow\n%s", p, before[p], after[p])
			}
		}
		var want []string
		for _, p := range protectWant {
			want = append(want, filepath.Join(w, p))
		}
		sort.Strings(want)
		if !slices.Equal(o.report.Enforcement.Protected, want) {
			t.Errorf("enforcement.protected %v\nwant %v", o.report.Enforcement.Protected, want)
		}

		// The control: the same writes with the list lifted.
		w2 := u.workdir(t)
		makeTree(t, u, w2, protectRepo)
		prof := filepath.Join(u.dir(t), "noprotect.toml")
		writeFile(t, prof, "extends = \"default\"\n[filesystem]\nprotect = []\n", 0o644)
		o = u.jailRun(t, w2, run{args: []string{"--profile", prof}}, "/bin/sh", "-c", attemptScript(protectAttempts))
		got = attemptResults(o.stdout)
		for _, a := range protectAttempts {
			if got[a[0]] != "ok" {
				t.Errorf("protect = []: %s (%s): %q, want it to succeed (else the test proves nothing)\n%s", a[0], a[1], got[a[0]], o)
			}
		}
		if len(o.report.Enforcement.Protected) != 0 {
			t.Errorf("protect = []: enforcement.protected %v", o.report.Enforcement.Protected)
		}
	})
}

// A --rw bind is protected as the workdir is, a repository whose hooks
// directory is missing (a command could create it) fails the run closed,
// and a served run (a warm jail) protects as a run jailed here does.
func TestProtectedPathsRwMissingServed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		data := u.dir(t)
		makeTree(t, u, data, map[string]string{".envrc": "x\n", ".git/HEAD": "x\n", ".git/config": "[core]\n", ".git/hooks/h": "x\n"})
		o := u.jailRun(t, w, run{args: []string{"--rw", data + ":/data"}}, "/bin/sh", "-c", attemptScript([][2]string{
			{"envrc", "echo x >> /data/.envrc"}, {"hook", "echo x > /data/.git/hooks/new"}, {"other", "echo x > /data/other"}}))
		got := attemptResults(o.stdout)
		if o.code != 0 || got["envrc"] != "no" || got["hook"] != "no" || got["other"] != "ok" {
			t.Errorf("--rw: %v\n%s", got, o)
		}
		if !slices.Contains(o.report.Enforcement.Protected, "/data/.envrc") || !slices.Contains(o.report.Enforcement.Protected, "/data/.git/hooks") {
			t.Errorf("--rw: enforcement.protected %v", o.report.Enforcement.Protected)
		}

		nohooks := u.workdir(t)
		makeTree(t, u, nohooks, map[string]string{"r/.git/HEAD": "x\n", "r/.git/config": "[core]\n"})
		o = u.jailRun(t, nohooks, run{}, "/bin/true")
		oneLineError(t, o, "r/.git/hooks does not exist", "mkdir", "protect = []")

		if hostNoUserNS {
			return
		}
		s := u.startServer(t, "")
		for i := 0; i < 2; i++ { // the second from the pool the first refilled
			o := u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "--", "/bin/sh", "-c",
				attemptScript([][2]string{{"hook", "echo x > .git/hooks/new"}, {"envrc", "echo x >> .envrc"}})}})
			got := attemptResults(o.stdout)
			if o.code != 0 || got["hook"] != "no" {
				t.Errorf("served run %d: %v\n%s", i, got, o)
			}
			if i == 0 {
				// A repository appears in the workdir between two calls: the
				// jail warmed without it must not serve the next.
				makeTree(t, u, w, map[string]string{".git/HEAD": "x\n", ".git/config": "[core]\n", ".git/hooks/h": "x\n", ".envrc": "x\n"})
			} else if got["envrc"] != "no" {
				t.Errorf("served run after the repository appeared: .envrc writable: %v\n%s", got, o)
			}
		}
	})
}

// Without namespaces nothing can be bound over a protected path: the run
// fails closed, or with --allow-degraded protect runs and says so.
func TestNoNamespacesProtect(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		uid, gid := noNSOwner(u)
		writeFile(t, filepath.Join(w, ".envrc"), "x\n", 0o644)
		os.Chown(filepath.Join(w, ".envrc"), uid, gid)
		o := u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces"}, wrap: noNSWrap}, "./tjhelper", "exit", "0")
		if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container") {
			t.Skipf("the emulated container cannot start here: %s", o.stderr)
		}
		oneLineError(t, o, ".envrc is a protected path", "--allow-degraded protect")
		o = u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces,protect"}, wrap: noNSWrap}, "./tjhelper", "exit", "0")
		if o.code != 0 || !slices.Contains(o.report.Enforcement.Degraded, "protect") {
			t.Errorf("--allow-degraded protect: want exit 0 and protect degraded\n%s", o)
		}
	})
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// FuzzRunFlags feeds `tooljail run` a whole argument list (NUL-separated)
// and follows it as far as run goes before it starts anything: parseRun,
// flags, profile, overlay, Spec. Invariants: no panic and no hang; an
// accepted list gives a Spec that passes jail.Spec.Validate and runs the
// command as given; an error is one line, and what run prints for it is
// one "tooljail: " line.
//
// Profile files are the ones this target writes (a FIFO, one over 1 MiB, a
// parent, one that extends a missing file, ...) or a shipped name: a path
// anywhere else is skipped, so that the fuzzer reads nothing of the host.
func FuzzRunFlags(f *testing.F) {
	dir := f.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		f.Fatal(err)
	}
	for name, content := range map[string]string{
		"big.toml":     "extends = \"default\"\n" + strings.Repeat("#", 1<<20) + "\n",
		"p.toml":       "extends = \"strict\"\n[limits]\nmax_violations = 5\nfsize = \"1M\"\n",
		"child.toml":   "extends = \"p.toml\"\n[network]\nmode = \"host\"\n",
		"orphan.toml":  "extends = \"missing.toml\"\n",
		"badkeys.toml": "extends = \"default\"\nfoo = 1\n[limits]\nmemroy = \"1G\"\n",
		"badnet.toml":  "extends = \"default\"\n[network]\nmode = \"hots\"\n",
		"nul.toml":     "extends = \"default\"\n[filesystem]\nro = [\"a\\u0000b:/x\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	work := filepath.Join(dir, "work")
	for _, s := range []string{
		"--memory\x00512M\x00--ro\x00/usr:/x\x00--\x00true",
		"--timeout\x001h\x00--env\x00A=B\x00--pass-env\x00HOME\x00sh",
		"--cpus\x000.5\x00--output-limit\x00unlimited\x00--tmpfs\x00/scratch:1G\x00x",
		"--allow-degraded\x00cgroup,landlock\x00--no-workdir\x00--mask\x00/etc/passwd\x00ls",
		"--host-user\x001000:1000\x00--report\x00r.json\x00--audit-log\x00a.log\x00id",
		// What broke, or could have.
		"--net=hots\x00--net\x00none\x00--\x00true",
		"--net\x00none\x00--net\x00host\x00--\x00true",
		"--on-violation\x00log\x00--on-violation\x00kill\x00--\x00true",
		"--memory\x0012XB\x00--memory\x001G\x00--\x00true",
		"--memory\x001G\x00--memory\x001G\x00--\x00true",
		"--\x00",
		"--\x00\x00arg",
		"",
		"--max-violations\x005\x00--\x00true",
		"--max-violations\x00-1\x00--\x00true",
		"--max-violations\x0099999999999\x00--\x00true",
		"--max-violations\x00unlimited\x00--fsize\x000\x00--\x00true",
		"--fsize\x001.5G\x00--\x00true",
		"--fsize\x009999999999999999999G\x00--\x00true",
		"--fsize\x008E\x00--output-limit\x001KB\x00--\x00true",
		"--tmpfs\x00/x:-1\x00--tmpfs\x00/y:\x00--\x00true",
		"--cpus\x00NaN\x00--cpus\x001e3\x00--\x00true",
		"--timeout\x00-5s\x00--cpu-time\x00500ms\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "fifo.toml") + "\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "big.toml") + "\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "child.toml") + "\x00--max-violations\x000\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "orphan.toml") + "\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "badkeys.toml") + "\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "badnet.toml") + "\x00--\x00true",
		"--profile\x00" + filepath.Join(dir, "nul.toml") + "\x00--\x00true",
		"--profile\x00strict\x00--profile\x00default\x00--\x00true",
		"--profile\x00\x00--\x00true",
		"--report\x00\x00--\x00true",
		"--workdir\x00\x00--\x00true",
		"--workdir\x00" + work + "\x00--no-workdir\x00--\x00true",
		"--workdir\x00../..\x00--\x00true",
		"--ro\x00a\nb:/x\x00--\x00true",
		"--no-such\nflag\x00--\x00true",
		"--env\x00A=\n\x00--pass-env\x00\n\x00--\x00true",
		"-h",
	} {
		f.Add(s)
	}
	environ := []string{"PATH=/bin", "HOME=/root", "A=b"}
	getwd := func() (string, error) { return work, nil }
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		if !hermetic(args, dir) {
			return
		}
		_, spec, _, err := parseRun(args, getwd, environ)
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		if err != nil {
			msg := err.Error()
			if msg == "" || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("%q: error is not one line: %q", args, msg)
			}
			var out bytes.Buffer
			if code := fail(&out, "%v", err); code != 125 || strings.Count(out.String(), "\n") != 1 || !strings.HasPrefix(out.String(), "tooljail: ") {
				t.Fatalf("%q: exit %d, printed %q", args, code, out.String())
			}
			return
		}
		defer func() {
			for _, o := range spec.Trusted {
				o.Close()
			}
		}()
		if err := spec.Validate(); err != nil {
			t.Fatalf("%q: the spec does not validate: %v", args, err)
		}
		if len(spec.Args) == 0 || spec.Args[0] == "" {
			t.Fatalf("%q: accepted with command %q", args, spec.Args)
		}
		if i := lastArgsIndex(args, spec.Args); i < 0 {
			t.Fatalf("%q: spec runs %q, not the command given", args, spec.Args)
		}
	})
}

// hermetic says whether args name no profile file outside dir: the
// profile flag's value, as the flag package will see it, is a shipped name
// or a path below dir. Anything unparsable is let through (it fails
// before any profile is read).
func hermetic(args []string, dir string) bool {
	var f runFlags
	fs := newRunFlagSet(&f)
	fs.Parse(args)
	if !f.profile.set || !strings.Contains(f.profile.value, "/") && !strings.HasSuffix(f.profile.value, ".toml") {
		return true
	}
	p := f.profile.value
	if !filepath.IsAbs(p) {
		return false
	}
	rel, err := filepath.Rel(dir, filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// lastArgsIndex is where cmd ends args, or -1: the command is what
// follows the flags.
func lastArgsIndex(args, cmd []string) int {
	if len(cmd) > len(args) {
		return -1
	}
	i := len(args) - len(cmd)
	if !reflect.DeepEqual(args[i:], cmd) {
		return -1
	}
	return i
}

package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as a profile file, next to
// a FIFO, an oversized file and a valid parent it may extend. It must
// never panic or hang; an error is one line; whatever it accepts must
// survive Marshal and Load unchanged and turn into a Spec that passes
// jail.Spec.Validate, or into a one-line error.
func FuzzLoad(f *testing.F) {
	for _, info := range List() {
		data, err := shipped.ReadFile(info.Name + ".toml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"extends = \"default\"\n",
		"extends = \"default\"\n[limits]\nmemory = 1073741824\ncpus = 0.5\npids = \"unlimited\"\n",
		"extends = \"default\"\n[limits]\nmemroy = \"1G\"\n",
		"extends = \"strict\"\n[filesystem]\nro = [\"a:/b\"]\ntmpfs = [\"/x:1K\"]\n[env]\nset = { A = \"b\" }\n",
		"extends = \"self.toml\"\n",
		"extends = \"default\"\n[landlock]\nbind_tcp = [1, 65535]\n",
		"extends = \"default\"\n[env.set]\n\"=\" = \"\"\n",
		"extends = \"default\"\n[limits]\ncpus = nan\nmemory = inf\n",
		"[[filesystem]]\n",
		"extends = [\"default\"]\n",
		"extends = \"default\"\nlimits = { memory = \"1G\" }\n",
		"extends = \"default\"\nhost_user = \"1000:1000\"\n",
		"extends = \"default\"\nhost_user = 70000\n",
		// What broke, or could have: a FIFO or an oversized parent, a
		// missing one, bad enums, weird sizes, several unknown keys,
		// newlines and NULs in keys and values.
		"extends = \"fifo.toml\"\n",
		"extends = \"big.toml\"\n",
		"extends = \"missing.toml\"\n",
		"extends = \"../missing/dir/p.toml\"\n",
		"extends = \"/dev/zero\"\n",
		"extends = \"parent.toml\"\n[limits]\nmax_violations = 0\n",
		"extends = \"default\"\n[network]\nmode = \"hots\"\n",
		"extends = \"default\"\n[seccomp]\non_violation = \"log\"\n",
		"extends = \"default\"\n[limits]\nmax_violations = -1\n",
		"extends = \"default\"\n[limits]\nmax_violations = 99999999999\n",
		"extends = \"default\"\n[limits]\nfsize = \"1.5G\"\noutput_limit = \"1KB\"\nmemory = \"9999999999999999999G\"\n",
		"extends = \"default\"\n[limits]\nfsize = \"8E\"\nmemory = \"0x10\"\ntimeout = \"-1s\"\ncpu_time = \"0.5s\"\n",
		"extends = \"default\"\n[filesystem]\ntmpfs = [\"/x:-1\", \"/y:\"]\n",
		"extends = \"default\"\nfoo = 1\n[seccomp]\nbar = 2\n",
		"extends = \"default\"\n\"a\\nb\" = 1\n",
		"extends = \"new\\nline.toml\"\n",
		"extends = \"default\"\n[filesystem]\nro = [\"a\\u0000b:/x\"]\nmask = [\"/m\\u0000\"]\n",
		"extends = \"default\"\n[env]\nset = { A = \"x\\u0000\" }\n",
	} {
		f.Add([]byte(s))
	}
	// One directory for the whole run (each fuzzing process has its own;
	// the target is not parallel): a fresh one per input costs more than
	// the load itself.
	dir := f.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.toml"), make([]byte, MaxSize+1), 0o644); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "parent.toml"), []byte("extends = \"strict\"\n[limits]\nmax_violations = 5\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "self.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path)
		if err != nil {
			checkOneLine(t, err)
			return
		}
		defer p.Close()
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a loaded profile: %v", err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("Load(Marshal(p)): %v\n%s", err, out)
		}
		back.Close()
		back.files = p.files
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the profile:\n%+v\n%+v\n%s", p, back, out)
		}
		// No workdir: Spec must not depend on where the fuzzer runs.
		no := false
		p.Filesystem.Workdir = &no
		s, err := p.Spec(Request{Args: []string{"true"}, Cwd: dir})
		if err != nil {
			checkOneLine(t, err)
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Spec gave a spec that does not validate: %v", err)
		}
	})
}

func checkOneLine(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error is not one line: %q", msg)
	}
}

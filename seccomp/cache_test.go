package seccomp

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCacheReuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	p := Policy{Deny: []string{"mkdir"}}

	c := &Compiler{Dir: dir}
	first, err := c.Compile(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compile(p, true); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Compiles != 1 || s.MemoryHits != 1 || s.DiskError != nil {
		t.Fatalf("stats %+v, want 1 compile and 1 memory hit", s)
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir: %v %v, want mode 0700", st.Mode(), err)
	}

	// A new process: a fresh Compiler on the same directory.
	c2 := &Compiler{Dir: dir}
	again, err := c2.Compile(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if s := c2.Stats(); s.Compiles != 0 || s.DiskHits != 1 {
		t.Fatalf("stats %+v, want a disk hit and no compile", s)
	}
	if !bytes.Equal(first.Filter, again.Filter) {
		t.Fatal("cached filter differs from the compiled one")
	}

	// A changed policy (or mode) is compiled, not served from the cache.
	if _, err := c2.Compile(Policy{Deny: []string{"rmdir"}}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Compile(p, false); err != nil {
		t.Fatal(err)
	}
	if s := c2.Stats(); s.Compiles != 2 {
		t.Fatalf("stats %+v, want 2 compiles for 2 new policies", s)
	}
}

// Every kind of tampering makes Compile recompile instead of loading the
// file, and the file is then replaced by a good one.
func TestCacheTamper(t *testing.T) {
	p := Policy{Allow: []string{"@ptrace"}}
	for _, tc := range []struct {
		name       string
		tamper     func(t *testing.T, dir, file string)
		needRoot   bool
		dirRefused bool // the whole cache is refused: no rewrite
	}{
		{name: "file-mode", tamper: func(t *testing.T, dir, file string) { must(t, os.Chmod(file, 0o644)) }},
		{name: "file-owner", needRoot: true, tamper: func(t *testing.T, dir, file string) { must(t, os.Chown(file, 65534, 65534)) }},
		{name: "content", tamper: func(t *testing.T, dir, file string) {
			b, err := os.ReadFile(file)
			must(t, err)
			b[len(b)-3] ^= 0x01 // one bit of a jump offset or constant
			must(t, os.WriteFile(file, b, 0o600))
		}},
		{name: "truncated", tamper: func(t *testing.T, dir, file string) { must(t, os.Truncate(file, 100)) }},
		{name: "symlink", tamper: func(t *testing.T, dir, file string) {
			// Even a link to a perfectly good copy is refused.
			good := filepath.Join(t.TempDir(), "good.bpf")
			b, err := os.ReadFile(file)
			must(t, err)
			must(t, os.WriteFile(good, b, 0o600))
			must(t, os.Remove(file))
			must(t, os.Symlink(good, file))
		}},
		{name: "hardlink", tamper: func(t *testing.T, dir, file string) {
			must(t, os.Link(file, filepath.Join(dir, "extra-link")))
		}},
		{name: "dir-mode", dirRefused: true, tamper: func(t *testing.T, dir, file string) { must(t, os.Chmod(dir, 0o755)) }},
		{name: "dir-owner", needRoot: true, dirRefused: true, tamper: func(t *testing.T, dir, file string) { must(t, os.Chown(dir, 65534, 65534)) }},
		{name: "dir-symlink", dirRefused: true, tamper: func(t *testing.T, dir, file string) {
			real := dir + ".real"
			must(t, os.Rename(dir, real))
			must(t, os.Symlink(real, dir))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			dir := filepath.Join(t.TempDir(), "cache")
			good, err := (&Compiler{Dir: dir}).Compile(p, true)
			must(t, err)
			key := mustKey(t, p, true)
			file := filepath.Join(dir, fileName(key))
			if _, err := os.Stat(file); err != nil {
				t.Fatalf("no cache file: %v", err)
			}
			tc.tamper(t, dir, file)

			c := &Compiler{Dir: dir}
			prog, err := c.Compile(p, true)
			must(t, err)
			s := c.Stats()
			if s.Compiles != 1 || s.DiskHits != 0 || s.DiskError == nil {
				t.Fatalf("stats %+v, want a recompile and the reason", s)
			}
			t.Logf("refused: %v", s.DiskError)
			if !bytes.Equal(prog.Filter, good.Filter) {
				t.Fatal("recompiled filter differs")
			}
			if tc.dirRefused {
				return
			}
			c3 := &Compiler{Dir: dir}
			_, err = c3.Compile(p, true)
			must(t, err)
			if s := c3.Stats(); s.DiskHits != 1 {
				t.Errorf("after the recompile the file was not replaced: %+v", s)
			}
		})
	}
}

func mustKey(t *testing.T, p Policy, notify bool) string {
	return cacheKey(p, notify)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

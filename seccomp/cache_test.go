package seccomp

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCacheReuse(t *testing.T) {
	d := openPath(t, privateDir(t))
	p := Policy{Deny: []string{"mkdir"}}

	c := &Compiler{}
	first, err := c.CompileDir(p, true, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CompileDir(p, true, d); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Compiles != 1 || s.MemoryHits != 1 || s.DiskError != nil {
		t.Fatalf("stats %+v, want 1 compile and 1 memory hit", s)
	}

	// A new process: a fresh Compiler on the same directory.
	c2 := &Compiler{}
	again, err := c2.CompileDir(p, true, d)
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
	if _, err := c2.CompileDir(Policy{Deny: []string{"rmdir"}}, true, d); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CompileDir(p, false, d); err != nil {
		t.Fatal(err)
	}
	if s := c2.Stats(); s.Compiles != 2 {
		t.Fatalf("stats %+v, want 2 compiles for 2 new policies", s)
	}
}

// Every kind of tampering makes CompileDir recompile instead of loading the
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			dir := privateDir(t)
			good, err := (&Compiler{}).CompileDir(p, true, openPath(t, dir))
			must(t, err)
			key := mustKey(t, p, true)
			file := filepath.Join(dir, fileName(key))
			if _, err := os.Stat(file); err != nil {
				t.Fatalf("no cache file: %v", err)
			}
			tc.tamper(t, dir, file)

			c := &Compiler{}
			prog, err := c.CompileDir(p, true, openPath(t, dir))
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
			c3 := &Compiler{}
			_, err = c3.CompileDir(p, true, openPath(t, dir))
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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// privateDir makes a cache directory as the jail does: mode 0700.
func privateDir(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "cache")
	must(t, os.Mkdir(dir, 0o700))
	return dir
}

// openPath opens dir as the jail does: O_PATH, no symlink.
func openPath(t testing.TB, dir string) *os.File {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), dir)
	t.Cleanup(func() { f.Close() })
	return f
}

// A policy no shipped profile has, so that the built-in filters miss.
var uncommon = Policy{Deny: []string{"mkdir"}, Allow: []string{"@ptrace"}}

func TestCompileDir(t *testing.T) {
	dir := privateDir(t)
	d := openPath(t, dir)

	c := &Compiler{}
	first, err := c.CompileDir(uncommon, true, d)
	must(t, err)
	if s := c.Stats(); s.Compiles != 1 || s.Last != FromCompiled || s.DiskError != nil {
		t.Fatalf("stats %+v, want a compile and no disk error", s)
	}
	if _, err := os.Stat(filepath.Join(dir, fileName(mustKey(t, uncommon, true)))); err != nil {
		t.Fatalf("no cache file written through the descriptor: %v", err)
	}

	// A new process: a fresh Compiler on the same opened directory.
	c2 := &Compiler{}
	again, err := c2.CompileDir(uncommon, true, d)
	must(t, err)
	if s := c2.Stats(); s.DiskHits != 1 || s.Compiles != 0 || s.Last != FromDisk {
		t.Fatalf("stats %+v, want a disk hit", s)
	}
	if !bytes.Equal(first.Filter, again.Filter) {
		t.Fatal("cached filter differs from the compiled one")
	}
	// The directory is looked up by descriptor only: renaming it away
	// changes nothing.
	must(t, os.Rename(dir, dir+".moved"))
	c3 := &Compiler{}
	_, err = c3.CompileDir(uncommon, true, d)
	must(t, err)
	if s := c3.Stats(); s.DiskHits != 1 {
		t.Fatalf("stats %+v, want a disk hit through the descriptor after a rename", s)
	}
}

// A nil directory means memory and built-in filters only: nothing is read
// or written on disk, not even in DefaultCacheDir.
func TestCompileDirNil(t *testing.T) {
	t.Setenv("TOOLJAIL_CACHE_DIR", t.TempDir())
	dir := DefaultCacheDir()
	c := &Compiler{}
	for i := 0; i < 2; i++ {
		if _, err := c.CompileDir(uncommon, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	if s := c.Stats(); s.Compiles != 1 || s.MemoryHits != 1 || s.DiskHits != 0 || s.DiskError != nil {
		t.Fatalf("stats %+v, want one compile, one memory hit, no disk", s)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("CompileDir(nil) touched %s: %v", dir, err)
	}
	// A fresh Compiler compiles again: there is no disk cache behind it.
	c2 := &Compiler{}
	if _, err := c2.CompileDir(uncommon, false, nil); err != nil {
		t.Fatal(err)
	}
	if s := c2.Stats(); s.Compiles != 1 {
		t.Fatalf("stats %+v, want a compile", s)
	}
}

// An opened directory that is not private to us is not used: compiled,
// nothing read from it or written to it, and the reason in DiskError.
func TestCompileDirRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		needRoot bool
		prepare  func(t *testing.T, dir string) string // returns the path to open
	}{
		{name: "mode", prepare: func(t *testing.T, dir string) string { must(t, os.Chmod(dir, 0o755)); return dir }},
		{name: "group-write", prepare: func(t *testing.T, dir string) string { must(t, os.Chmod(dir, 0o770)); return dir }},
		{name: "owner", needRoot: true, prepare: func(t *testing.T, dir string) string { must(t, os.Chown(dir, 65534, 65534)); return dir }},
		{name: "not-a-directory", prepare: func(t *testing.T, dir string) string {
			f := filepath.Join(dir, "file")
			must(t, os.WriteFile(f, nil, 0o600))
			return f
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to chown")
			}
			dir := privateDir(t)
			// A good file planted first: a refused directory is not read.
			_, err := (&Compiler{}).CompileDir(uncommon, true, openPath(t, dir))
			must(t, err)
			path := tc.prepare(t, dir)
			fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			must(t, err)
			d := os.NewFile(uintptr(fd), path)
			defer d.Close()
			before, _ := os.ReadDir(dir)

			c := &Compiler{}
			_, err = c.CompileDir(uncommon, true, d)
			must(t, err)
			s := c.Stats()
			if s.Compiles != 1 || s.DiskHits != 0 || s.DiskError == nil {
				t.Fatalf("stats %+v, want a compile and the reason", s)
			}
			t.Logf("refused: %v", s.DiskError)
			if after, _ := os.ReadDir(dir); len(after) != len(before) {
				t.Errorf("the refused directory was written to: %d entries, then %d", len(before), len(after))
			}
		})
	}
}

// The built-in filters come after the memory cache and before any disk:
// a hit does not even check the directory it is given.
func TestBuiltinLookup(t *testing.T) {
	p := Policy{Allow: []string{"@perf"}} // no shipped profile has it
	fake := &Program{Filter: encode([]unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: retAllow}})}
	for _, notify := range []bool{false, true} {
		key := cacheKey(p, notify)
		builtinFilters[key] = hex.EncodeToString(fake.Filter)
		defer delete(builtinFilters, key)
	}
	if got := Builtin(p, true); got == nil || !bytes.Equal(got.Filter, fake.Filter) || !got.Notify {
		t.Fatalf("Builtin = %+v, want the fake entry with notify", got)
	}
	if Builtin(Policy{Allow: []string{"@perf", "bpf"}}, true) != nil {
		t.Fatal("Builtin found a policy that is not in the table")
	}

	dir := privateDir(t)
	must(t, os.Chmod(dir, 0o755)) // would be refused (DiskError) if it were checked
	c := &Compiler{}
	for _, compile := range []func() (*Program, error){
		func() (*Program, error) { return c.CompileDir(p, false, openPath(t, dir)) },
		func() (*Program, error) { return (&Compiler{}).CompileDir(p, false, openPath(t, dir)) },
	} {
		prog, err := compile()
		must(t, err)
		if !bytes.Equal(prog.Filter, fake.Filter) || prog.Notify {
			t.Fatalf("got %+v, want the built-in entry without notify", prog)
		}
	}
	if _, err := c.Compile(p, false); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.BuiltinHits != 1 || s.MemoryHits != 1 || s.Compiles != 0 || s.DiskError != nil || s.Last != FromMemory {
		t.Fatalf("stats %+v, want a built-in hit, then a memory hit, and no disk", s)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a built-in hit wrote to the disk cache: %v", entries)
	}
}

// builtin_filters.go as WriteBuiltin writes it: gofmt'ed, one entry per
// key, the filter of a fresh compile.
func TestWriteBuiltin(t *testing.T) {
	var b bytes.Buffer
	ps := []NamedPolicy{{"a", Policy{}}, {"b", Policy{Allow: []string{}}}, {"c", uncommon}}
	must(t, WriteBuiltin(&b, ps))
	src := b.Bytes()
	if formatted, err := format.Source(src); err != nil || !bytes.Equal(formatted, src) {
		t.Fatalf("not gofmt'ed (%v):\n%s", err, src)
	}
	if !bytes.HasPrefix(src, []byte("// Code generated ")) || !bytes.Contains(src, []byte("DO NOT EDIT.\n")) {
		t.Error("no generated-code header")
	}
	joined := strings.ReplaceAll(string(src), "\" +\n\t\t\"", "")
	for _, p := range []Policy{{}, uncommon} {
		for _, notify := range []bool{false, true} {
			prog, err := compileUncached(p, notify)
			must(t, err)
			entry := fmt.Sprintf("%q: %q,", cacheKey(p, notify), hex.EncodeToString(prog.Filter))
			if n := strings.Count(joined, entry); n != 1 {
				t.Errorf("policy %+v notify %v: %d entries, want 1", p, notify, n)
			}
		}
	}
	if !strings.Contains(joined, "// a, b (allow") {
		t.Errorf("profiles sharing a policy are not named together:\n%s", src)
	}
}

func BenchmarkCompileBuiltin(b *testing.B) {
	if Builtin(Policy{}, true) == nil {
		b.Skip("no built-in filter for the default policy in this build")
	}
	for i := 0; i < b.N; i++ {
		c := &Compiler{}
		if _, err := c.CompileDir(Policy{}, true, nil); err != nil {
			b.Fatal(err)
		}
		if s := c.Stats(); s.BuiltinHits != 1 {
			b.Fatalf("stats %+v", s)
		}
	}
}

package seccomp

import (
	"bytes"
	"testing"
	"time"
)

func TestCompileDeterministic(t *testing.T) {
	p := Policy{Allow: []string{"@ptrace"}, Deny: []string{"@network"}}
	for _, notify := range []bool{false, true} {
		a, err := (&Compiler{}).Compile(p, notify)
		if err != nil {
			t.Fatal(err)
		}
		b, err := (&Compiler{}).Compile(p, notify)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Filter, b.Filter) || a.Notify != notify || b.Notify != notify {
			t.Errorf("notify=%v: two compilations differ", notify)
		}
	}
}

func TestCompileDiffers(t *testing.T) {
	c := &Compiler{}
	base, err := c.Compile(Policy{}, true)
	if err != nil {
		t.Fatal(err)
	}
	errno, err := c.Compile(Policy{}, false)
	if err != nil {
		t.Fatal(err)
	}
	ptrace, err := c.Compile(Policy{Allow: []string{"ptrace"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(base.Filter, errno.Filter) || bytes.Equal(base.Filter, ptrace.Filter) {
		t.Error("different policies compiled to the same filter")
	}
	if s := c.Stats(); s.Compiles+s.BuiltinHits != 3 {
		t.Errorf("stats %+v, want 3 compiles or built-in filters", s)
	}
	t0 := time.Now()
	if _, err := compileUncached(Policy{}, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("default filter: %d instructions (notify), %d (errno); uncached compile %v",
		base.Instructions(), errno.Instructions(), time.Since(t0))
	if n := base.Instructions(); n > 1024 {
		t.Errorf("default filter has %d instructions; keep it under 1024", n)
	}
}

func TestCompileRejectsBadPolicy(t *testing.T) {
	if _, err := CompileDir(Policy{Allow: []string{"nosuchcall"}}, true, nil); err == nil {
		t.Error("unknown syscall compiled")
	}
}

func TestDecodeRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{nil, make([]byte, 7), make([]byte, 8*4097)} {
		if _, err := decode(b); err == nil {
			t.Errorf("decode(%d bytes) accepted", len(b))
		}
	}
	if _, _, err := ThreadArgs(&Program{Filter: make([]byte, 12)}); err == nil {
		t.Error("ThreadArgs accepted a truncated filter")
	}
}

// BenchmarkCompile is libseccomp's share: the default policy, no cache.
func BenchmarkCompile(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := compileUncached(Policy{}, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileDiskCache is what a new `tooljail run` of a profile of
// the user's own pays: a fresh Compiler (empty memory cache) finding the
// program on disk. (A shipped profile's is built in: BenchmarkCompileBuiltin.)
func BenchmarkCompileDiskCache(b *testing.B) {
	d := openPath(b, privateDir(b))
	if _, err := (&Compiler{}).CompileDir(uncommon, true, d); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := &Compiler{}
		if _, err := c.CompileDir(uncommon, true, d); err != nil {
			b.Fatal(err)
		}
		if s := c.Stats(); s.DiskHits != 1 {
			b.Fatalf("stats %+v", s)
		}
	}
}

// BenchmarkCompileMemoryCache is what an embedder pays per run.
func BenchmarkCompileMemoryCache(b *testing.B) {
	c := &Compiler{}
	if _, err := c.Compile(Policy{}, true); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Compile(Policy{}, true); err != nil {
			b.Fatal(err)
		}
	}
}

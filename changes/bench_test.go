package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkApply applies 100 changed files in binds of 10,000 and
// 100,000 files: the cost is the set's, not the project's (nothing walks
// the project). Target: under 50 ms (DESIGN, section 7).
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			host := filepath.Join(b.TempDir(), "project")
			for i := 0; i < n; i++ {
				d := filepath.Join(host, fmt.Sprintf("d%03d", i/1000))
				if i%1000 == 0 {
					must(b, os.MkdirAll(d, 0o755))
				}
				must(b, os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.go", i%1000)), []byte("package p\n"), 0o644))
			}
			s := newStore(b)
			// The tree's creation is not the apply's to write back.
			unix.Sync()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f := newFixtureIn(b, s, host)
				for j := 0; j < 100; j++ {
					// Ten files in each of ten directories spread over the
					// tree: the same set's shape at either size.
					k := (j/10)*(n/10) + j%10
					f.file(fmt.Sprintf("d%03d/f%04d.go", k/1000, k%1000), fmt.Sprintf("package p // edit %d\n", i), 0o644)
				}
				id := f.finish()
				b.StartTimer()
				if _, err := s.Apply(id, ApplyOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

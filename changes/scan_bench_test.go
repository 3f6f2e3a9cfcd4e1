package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkScan scans 100 changes (50 edits, 30 new files, 20 deletions,
// spread over 10 directories) over a lower layer of 10,000 and of 100,000
// files: the times should be alike, as Scan reads the upper layer and
// looks up only the lower names it holds.
func BenchmarkScan(b *testing.B) {
	for _, files := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("lower=%d", files), func(b *testing.B) {
			d := b.TempDir()
			lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
			const dirs = 100
			for i := range dirs {
				dir := filepath.Join(lower, fmt.Sprintf("d%03d", i))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				for j := range files / dirs {
					if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%05d", j)), []byte("some content\n"), 0o644); err != nil {
						b.Fatal(err)
					}
				}
			}
			for n := range 100 {
				dir := filepath.Join(upper, fmt.Sprintf("d%03d", n%10*10))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
				var err error
				switch name := filepath.Join(dir, fmt.Sprintf("f%05d", n)); {
				case n < 50:
					err = os.WriteFile(name, []byte("other content\n"), 0o644)
				case n < 80:
					err = os.WriteFile(name+".new", []byte("new\n"), 0o644)
				default:
					if err = unix.Mknod(name, unix.S_IFCHR, 0); err != nil {
						err = os.WriteFile(name+".new", []byte("new\n"), 0o644)
					}
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			u, err := os.Open(upper)
			if err != nil {
				b.Fatal(err)
			}
			defer u.Close()
			l, err := os.Open(lower)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.ResetTimer()
			for b.Loop() {
				cs, err := Scan(u, l, "/work", []string{".git/hooks", ".bashrc"})
				if err != nil || len(cs) != 100 {
					b.Fatalf("%d changes, %v", len(cs), err)
				}
			}
		})
	}
}

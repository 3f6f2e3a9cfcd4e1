// Package disttest installs and runs what `make dist` made: the tarballs,
// the .debs and SHA256SUMS. It skips unless TOOLJAIL_DIST names the dist
// directory (`make dist-check` sets it); it takes the artefacts from there,
// whoever built them, and checks they are of this checkout's VERSION and
// commit.
package disttest

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repo is the repository root, from this package's directory.
const repo = "../.."

// distDir is TOOLJAIL_DIST, or skips the test.
func distDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("TOOLJAIL_DIST")
	if d == "" {
		t.Skip("TOOLJAIL_DIST is not set: run `make dist-check` to test what `make dist` made")
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// version is the VERSION file: what every artefact is named by.
func version(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// headCommit is this checkout's commit, which the binaries must name.
func headCommit(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// sharedTempDir is a fresh directory every user may enter (uid 65534 runs
// binaries from it), removed at the end of the test.
func sharedTempDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tooljail-dist-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// untar unpacks a .tar.gz into dir as tar(1) would, with the modes it
// records, and lists its entries.
func untar(t *testing.T, archive, dir string) []*tar.Header {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	var hs []*tar.Header
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		hs = append(hs, h)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q leaves the directory", archive, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, os.FileMode(h.Mode)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			w, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, os.FileMode(h.Mode))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			w.Close()
		default:
			t.Errorf("%s: entry %q is of type %q; a release holds files and directories only", archive, h.Name, h.Typeflag)
		}
	}
	return hs
}

// manPages lists the pages docs/man holds; a tree without them fails.
func manPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "man", "*.[1-8]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("docs/man holds no man pages")
	}
	var names []string
	for _, p := range pages {
		names = append(names, filepath.Base(p))
	}
	return names
}

// runOut runs a command and returns its stdout, stderr and exit code.
func runOut(t *testing.T, dir string, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s %q: %v", name, args, err)
		}
		code = ee.ExitCode()
	}
	return stdout.String(), stderr.String(), code
}

package main

import (
	"bytes"
	"os"
	"regexp"
	"runtime"
	"testing"
)

// The file in the tree is what the generator writes now: every shipped
// profile's filter, in both modes, as this libseccomp compiles it, and
// nothing else. It fails after a change to the profiles' [seccomp] tables,
// the syscall groups or the prologue until `make generate` has been run.
func TestBuiltinFiltersCurrent(t *testing.T) {
	const file = "../../builtin_filters.go" // the test runs in its package's directory
	const regen = "run `make generate` (go run ./seccomp/internal/genbuiltin)"
	have, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	haveArch, haveLib := target(t, have)
	_, wantLib := target(t, want)
	switch {
	case haveArch != runtime.GOARCH:
		t.Skipf("the built-in filters are generated for %s; on %s every run compiles its filter (or finds it in the disk cache)", haveArch, runtime.GOARCH)
	case haveLib != wantLib:
		t.Fatalf("seccomp/builtin_filters.go was generated with libseccomp %s, this test links %s: its filters would never be found; %s", haveLib, wantLib, regen)
	}
	if !bytes.Equal(have, want) {
		t.Fatalf("seccomp/builtin_filters.go is stale (first difference at line %d): %s", firstDiff(have, want), regen)
	}
}

var targetLine = regexp.MustCompile(`(?m)^var builtinTarget = \[2\]string\{"([^"]*)", "([^"]*)"\}$`)

// target reads the GOARCH and libseccomp version a generated file names.
func target(t *testing.T, src []byte) (goarch, libseccomp string) {
	t.Helper()
	m := targetLine.FindSubmatch(src)
	if m == nil {
		t.Fatalf("no builtinTarget line in:\n%.400s", src)
	}
	return string(m[1]), string(m[2])
}

func firstDiff(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

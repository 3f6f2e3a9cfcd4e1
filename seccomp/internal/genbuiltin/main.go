// Command genbuiltin writes seccomp/builtin_filters.go: the seccomp filters
// of the shipped profiles, compiled now with libseccomp, which Compile finds
// before any cache. Run it from the module root after changing the
// profiles' [seccomp] tables, the syscall groups or the prologue:
//
//	go run ./seccomp/internal/genbuiltin   (or: make generate)
//
// Its test (TestBuiltinFiltersCurrent) fails until it has been run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"

	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/seccomp"
)

func main() {
	out := flag.String("o", "seccomp/builtin_filters.go", "file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "genbuiltin:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	src, err := generate()
	if err != nil {
		return err
	}
	// Write and rename: an interrupted run leaves the old file whole.
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, src, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// generate returns builtin_filters.go as it should be now.
func generate() ([]byte, error) {
	policies, err := shippedPolicies()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := seccomp.WriteBuiltin(&b, policies); err != nil {
		return nil, err
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("generated source does not parse: %w", err)
	}
	return src, nil
}

// shippedPolicies are the seccomp policies of the shipped profiles that
// enable seccomp, as Profile.Spec hands them to the jail.
func shippedPolicies() ([]seccomp.NamedPolicy, error) {
	var out []seccomp.NamedPolicy
	for _, info := range profiles.List() {
		p, err := profiles.Load(info.Name)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", info.Name, err)
		}
		if sc := p.Seccomp; sc.Enabled != nil && *sc.Enabled {
			out = append(out, seccomp.NamedPolicy{Name: info.Name, Policy: seccomp.Policy{Allow: sc.Allow, Deny: sc.Deny}})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no shipped profile enables seccomp")
	}
	return out, nil
}

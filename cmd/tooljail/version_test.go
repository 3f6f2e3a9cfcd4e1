package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommitOf(t *testing.T) {
	info := func(settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Settings: settings}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123abcd"}
	for _, tc := range []struct {
		name    string
		stamped string
		read    func() (*debug.BuildInfo, bool)
		want    string
	}{
		{"the -X value wins", "feedbeef", info(rev), "feedbeef"},
		{"vcs revision", "", info(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "0123abcd"},
		{"vcs revision of a dirty tree", "", info(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "0123abcd-dirty"},
		{"no vcs stamp", "", info(), "unknown"},
		{"no build info", "", none, "unknown"},
	} {
		if got := commitOf(tc.stamped, tc.read); got != tc.want {
			t.Errorf("%s: commitOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVersionLineAndJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"version"}, &out, &errb); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errb.String())
	}
	line := out.String()
	target := runtime.GOOS + "/" + runtime.GOARCH
	for _, want := range []string{"tooljail ", "commit ", runtime.Version(), "libseccomp 2.", target} {
		if !strings.Contains(line, want) {
			t.Errorf("version line %q does not name %q", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("version printed %q, want one line", line)
	}

	out.Reset()
	if code := dispatch([]string{"version", "--json"}, &out, &errb); code != 0 {
		t.Fatalf("version --json: exit %d: %s", code, errb.String())
	}
	var bi buildInfo
	if err := json.Unmarshal(out.Bytes(), &bi); err != nil {
		t.Fatalf("version --json printed %q: %v", out.String(), err)
	}
	if bi.Target != target || bi.Go != runtime.Version() || !strings.HasPrefix(bi.Libseccomp, "2.") || bi.Version == "" || bi.Commit == "" {
		t.Errorf("version --json = %+v", bi)
	}
	if code := dispatch([]string{"version", "extra"}, &out, &errb); code == 0 {
		t.Error("version extra: exit 0, want a usage error")
	}
}

package serve

import (
	"slices"
	"strings"
	"testing"
)

func givenOf(flags ...string) func(string) bool {
	return func(f string) bool { return slices.Contains(flags, f) }
}

func TestServedFlagError(t *testing.T) {
	cases := []struct {
		given []string
		want  string // in the error; "" for none
	}{
		{nil, ""},
		{[]string{"memory", "net", "workdir", "profile", "env"}, ""},
		{[]string{"ro"}, "--ro cannot be used with a server (--server, TOOLJAIL_SERVER): binds come from the server's profile; serve a profile that has it"},
		{[]string{"root"}, "--root cannot be used with a server (--server, TOOLJAIL_SERVER): the server's profile sets filesystem.root, and a client's own profile may not; serve a profile that sets it (tooljail serve --profile FILE), or run without a server"},
		// The first in notServed's order, not the flags'.
		{[]string{"audit-log", "cache", "rw"}, "--cache cannot"},
		{[]string{"changes-dir"}, "the server keeps its clients' change sets"},
	}
	for _, c := range cases {
		err := ServedFlagError(givenOf(c.given...))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.given, err, c.want)
		}
	}
}

func TestSessionCallFlagError(t *testing.T) {
	cases := []struct {
		given  []string
		limits []string
		want   string
	}{
		{nil, nil, ""},
		{[]string{"workdir", "env", "timeout", "output-limit"}, []string{"timeout", "output_limit"}, ""},
		{[]string{"net"}, nil, "--net cannot be used with --session: the session's start decided it ('tooljail session start --net ...')"},
		{[]string{"toolchain", "profile"}, nil, "--profile cannot"},
		{nil, []string{"timeout", "cpu_time", "memory"}, "--cpu-time cannot be used with --session: a session's limits are its start's"},
	}
	for _, c := range cases {
		err := SessionCallFlagError(givenOf(c.given...), c.limits)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q %q: %v, want %q", c.given, c.limits, err, c.want)
		}
	}
}

func TestSessionStartFlagError(t *testing.T) {
	cases := []struct {
		given []string
		want  string
	}{
		{nil, ""},
		{[]string{"net", "memory", "profile", "workdir"}, ""},
		{[]string{"report", "env"}, "--env is a call's, not a session's: give it to 'tooljail run --session ID'"},
		{[]string{"keep-running"}, "--keep-running is a call's"},
	}
	for _, c := range cases {
		err := SessionStartFlagError(givenOf(c.given...))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%q: %v, want %q", c.given, err, c.want)
		}
	}
}

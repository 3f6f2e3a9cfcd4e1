package main

import (
	"errors"
	"testing"
)

func TestWantTTY(t *testing.T) {
	for _, c := range []struct {
		name                  string
		f                     runFlags
		stdinTerm, stdoutTerm bool
		want                  bool
	}{
		{"a person at both ends", runFlags{}, true, true, true},
		{"stdin piped", runFlags{}, false, true, false},
		{"stdout piped", runFlags{}, true, false, false},
		{"neither", runFlags{}, false, false, false},
		{"--json captures the output", runFlags{json: true}, true, true, false},
		{"--tty without terminals", runFlags{tty: true}, false, false, true},
		{"--tty with --json", runFlags{tty: true, json: true}, false, false, true},
		{"--no-tty at a terminal", runFlags{noTTY: true}, true, true, false},
	} {
		if got := wantTTY(&c.f, c.stdinTerm, c.stdoutTerm); got != c.want {
			t.Errorf("%s: wantTTY = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestTTYFlagsContradict(t *testing.T) {
	getwd := func() (string, error) { return "/work/proj", nil }
	if _, _, _, err := parseRun([]string{"--tty", "--no-tty", "--", "true"}, getwd, nil); !errors.Is(err, errTTYTwice) {
		t.Errorf("parseRun --tty --no-tty: %v, want %v", err, errTTYTwice)
	}
	if _, err := parseServed([]string{"--server", "/run/tj.sock", "--tty", "--no-tty", "--", "true"}, getwd, nil); !errors.Is(err, errTTYTwice) {
		t.Errorf("parseServed --tty --no-tty: %v, want %v", err, errTTYTwice)
	}
	sr, err := parseServed([]string{"--server", "/run/tj.sock", "--tty", "--", "true"}, getwd, nil)
	if err != nil || !sr.req.TTY {
		t.Errorf("parseServed --tty: %v, request tty %v; want it sent", err, sr != nil && sr.req.TTY)
	}
	sr, err = parseServed([]string{"--server", "/run/tj.sock", "--", "true"}, getwd, nil)
	if err != nil || sr.req.TTY {
		t.Errorf("parseServed without --tty: %v; the terminals decide (servedRun.run), not the parse", err)
	}
}

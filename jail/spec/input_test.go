package spec

import (
	"math"
	"strings"
	"testing"
)

// What the C side would cut short or misread is refused: an empty command
// name, NUL bytes in anything handed over as a C string, a negative
// violation bound, a CPU count that is not a number.
func TestValidateInput(t *testing.T) {
	cases := []struct {
		name string
		edit func(s *Spec)
		want string
	}{
		{"empty command name", func(s *Spec) { s.Args = []string{""} }, "empty command name"},
		{"empty command name with args", func(s *Spec) { s.Args = []string{"", "x"} }, "empty command name"},
		{"NUL in command", func(s *Spec) { s.Args = []string{"/bin/true\x00x"} }, "NUL"},
		{"NUL in argument", func(s *Spec) { s.Args = []string{"/bin/echo", "a\x00b"} }, "NUL"},
		{"NUL in env", func(s *Spec) { s.Env = []string{"A=b\x00c"} }, "NUL"},
		{"NUL in dir", func(s *Spec) { s.Dir = "/tmp\x00/x" }, "NUL"},
		{"NUL in home", func(s *Spec) { s.Home = "/home/\x00" }, "NUL"},
		{"NUL in hostname", func(s *Spec) { s.Hostname = "a\x00b" }, "NUL"},
		{"NUL in bind source", func(s *Spec) { s.Mounts[0].Source = "/usr\x00/x" }, "NUL"},
		{"NUL in dest", func(s *Spec) { s.Mounts[0].Dest = "/usr\x00" }, "NUL"},
		{"negative max violations", func(s *Spec) { s.Limits.MaxViolations = -1 }, "negative"},
		{"NaN cpus", func(s *Spec) { s.Limits.CPUs = math.NaN() }, "cpus"},
		{"infinite cpus", func(s *Spec) { s.Limits.CPUs = math.Inf(1) }, "cpus"},
	}
	for _, c := range cases {
		s := validSpec()
		c.edit(s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	s := validSpec()
	s.Args = []string{"/bin/sh", "-c", ""}
	s.Limits.MaxViolations = 10000
	if err := s.Validate(); err != nil {
		t.Errorf("an empty argument after the command, a violation bound: %v", err)
	}
}

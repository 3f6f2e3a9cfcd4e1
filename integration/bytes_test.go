package integration

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// Output through the jail is exact, byte for byte, on every path: the
// tests compare what comes back with what the command wrote.

// exactFiles writes files of odd bytes into the workdir w and returns
// their names and contents: 16 MiB of random bytes (the default output
// limit, so not truncated), latin-1, UTF-16 with its BOM, and valid UTF-8.
func exactFiles(t *testing.T, u *user, w string) map[string][]byte {
	t.Helper()
	random := make([]byte, 16<<20)
	rand.Read(random)
	files := map[string][]byte{
		"random.bin": random,
		"latin1.txt": []byte("caf\xe9 na\xefve \xa9 \xff\n"),
		"utf16.txt":  {0xff, 0xfe, 'h', 0, 0xe9, 0, '\n', 0, 0x3d, 0xd8, 0x00, 0xde}, // "hé\n😀"
		"utf8.txt":   []byte("plain é € 😀 \x01\n"),
	}
	for name, b := range files {
		p := filepath.Join(w, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, u.dirUID, u.dirGID); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// exactBytes are the bytes of a report's stream entry: its base64 when
// the bytes are not UTF-8, else its text; never both.
func exactBytes(t *testing.T, what string, s stream, want []byte) {
	t.Helper()
	if valid := utf8.Valid(want); (s.Text != nil) != valid || (s.Base64 != nil) == valid {
		t.Fatalf("%s: text %v, base64 %v in the report for bytes valid UTF-8 %v", what, s.Text != nil, s.Base64 != nil, valid)
	}
	var got []byte
	if s.Text != nil {
		got = []byte(*s.Text)
	}
	if s.Base64 != nil {
		var err error
		if got, err = base64.StdEncoding.DecodeString(*s.Base64); err != nil {
			t.Fatalf("%s: base64: %v", what, err)
		}
	}
	if sha256.Sum256(got) != sha256.Sum256(want) || s.Bytes != int64(len(want)) || s.Truncated {
		t.Errorf("%s: %d bytes came back (%d counted, truncated %v), not the %d written: %.40q", what, len(got), s.Bytes, s.Truncated, len(want), got)
	}
}

// --json (and the --report file of the same run), a served run's report,
// and `run --server --json` carry the exact bytes; a streamed run's
// chunks do too.
func TestOutputBytesExact(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		files := exactFiles(t, u, w)
		s := u.startServer(t, "")
		for name, want := range files {
			path := filepath.Join(w, name)
			o := u.jailRun(t, w, run{args: []string{"--json"}}, "/bin/cat", path)
			var r report
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || o.code != 0 {
				t.Fatalf("%s: --json: exit %d, %v\n%s", name, o.code, err, o)
			}
			exactBytes(t, name+": --json", r.Stdout, want)
			exactBytes(t, name+": --report with --json", o.report.Stdout, want)

			rep := s.call(t, req{Argv: []string{"/bin/cat", path}, Workdir: w})
			if rep.report == nil {
				t.Fatalf("%s: served: no report\n%s", name, rep)
			}
			exactBytes(t, name+": served", rep.report.Stdout, want)
			rep = s.call(t, req{Argv: []string{"/bin/cat", path}, Workdir: w, Stream: true})
			if got := rep.streamed("stdout"); rep.report == nil || sha256.Sum256([]byte(got)) != sha256.Sum256(want) {
				t.Errorf("%s: served, streamed: %d bytes came back, not the %d written", name, len(got), len(want))
			}

			o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "--json", "--", "/bin/cat", path}, dir: w})
			r = report{}
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || o.code != 0 {
				t.Fatalf("%s: run --server --json: exit %d, %v\n%s", name, o.code, err, o)
			}
			exactBytes(t, name+": run --server --json", r.Stdout, want)
			o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, "-q", "--", "/bin/cat", path}, dir: w})
			if o.code != 0 || o.stdout != string(want) {
				t.Errorf("%s: run --server: exit %d, %d bytes, not the %d written", name, o.code, len(o.stdout), len(want))
			}
		}
	})
}

// mergeScript writes to stdout and stderr in turn; mergeWant is what it
// wrote, in order.
const (
	mergeShort  = `echo 1; echo 2 >&2; echo 3`
	mergeScript = `echo 1; echo 2 >&2; echo 3; i=0; while [ $i -lt 2000 ]; do echo o$i; echo e$i >&2; i=$((i+1)); done`
)

func mergeWant() string {
	var b strings.Builder
	b.WriteString("1\n2\n3\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "o%d\ne%d\n", i, i)
	}
	return b.String()
}

// mergedEntry checks a report's stderr entry of a merged run.
func mergedEntry(t *testing.T, what string, s stream) {
	t.Helper()
	if !s.Merged || s.Bytes != 0 || s.Text != nil {
		t.Errorf("%s: the stderr entry %+v; want merged, 0 bytes, no text", what, s)
	}
}

// --merge-stderr keeps the order of the command's writes to fd 1 and 2,
// plain and with --json, through the CLI jailed here and served, and
// served through the protocol (streamed and in the report).
func TestMergeStderrOrder(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		s := u.startServer(t, "")
		want := mergeWant()
		for _, script := range []string{mergeShort, mergeScript} {
			want := want
			if script == mergeShort {
				want = "1\n2\n3\n"
			}
			o := u.jailRun(t, w, run{args: []string{"-q", "--merge-stderr"}}, "/bin/sh", "-c", script)
			if o.code != 0 || o.stdout != want || o.stderr != "" {
				t.Errorf("run --merge-stderr: exit %d, stdout not the writes in order, or stderr not empty\n%s", o.code, o)
			}
			mergedEntry(t, "run --merge-stderr", o.report.Stderr)
			if o.report.Stdout.Bytes != int64(len(want)) {
				t.Errorf("run --merge-stderr: the report counts %d bytes of stdout, want %d", o.report.Stdout.Bytes, len(want))
			}

			o = u.jailRun(t, w, run{args: []string{"--json", "--merge-stderr"}}, "/bin/sh", "-c", script)
			var r report
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || r.Stdout.Text == nil || *r.Stdout.Text != want {
				t.Errorf("run --json --merge-stderr: the report's stdout is not the writes in order (%v)\n%s", err, o)
			}
			mergedEntry(t, "run --json --merge-stderr", r.Stderr)

			for _, stream := range []bool{false, true} {
				rep := s.call(t, req{Argv: []string{"/bin/sh", "-c", script}, Merge: true, Stream: stream})
				if rep.report == nil || rep.stdout() != want || rep.streamed("stderr") != "" {
					t.Errorf("served, stream %v: not the writes in order on stdout\n%s", stream, rep)
					continue
				}
				mergedEntry(t, fmt.Sprintf("served, stream %v", stream), rep.report.Stderr)
			}
			for _, mode := range []string{"-q", "--json"} {
				o = u.exec(t, run{args: []string{"run", "--server", s.sock, "--workdir", w, mode, "--merge-stderr", "--", "/bin/sh", "-c", script}, dir: w})
				got := o.stdout
				if mode == "--json" {
					var r report
					if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || r.Stdout.Text == nil {
						t.Fatalf("run --server --json: %v\n%s", err, o)
					}
					got = *r.Stdout.Text
					mergedEntry(t, "run --server --json --merge-stderr", r.Stderr)
				}
				if o.code != 0 || got != want || o.stderr != "" {
					t.Errorf("run --server %s --merge-stderr: not the writes in order on stdout\n%s", mode, o)
				}
			}
		}
	})
}

// Without namespaces too, fd 1 and 2 are one pipe.
func TestNoNamespacesMergeStderr(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		o, r := noNSRun(t, u, w, []string{"-q", "--merge-stderr"}, mergeScript)
		if o.code != 0 || r.Enforcement.Mode != "landlock-seccomp" || o.stdout != mergeWant() || o.stderr != "" {
			t.Errorf("without namespaces: exit %d, mode %s, not the writes in order on stdout\n%s", o.code, r.Enforcement.Mode, o)
		}
		mergedEntry(t, "without namespaces", o.report.Stderr)
	})
}

// A command that is not found or not executable gets its reason on
// tooljail's stderr, also with --quiet, jailed here and through a server
// (where it comes once, on the stderr stream); with --json the report's
// reason has it and the texts stay the command's.
func TestExecFailureReasonOnStderr(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		s := u.startServer(t, "")
		for _, c := range []struct {
			command string
			code    int
			want    string
		}{
			{"tooljail-no-such-command", 127, "tooljail: tooljail-no-such-command: command not found in the jail (PATH="},
			{"/etc/hostname", 126, "tooljail: /etc/hostname: not executable: permission denied\n"},
		} {
			line := func(what string, o *outcome) {
				t.Helper()
				if o.code != c.code || !strings.HasPrefix(o.stderr, c.want) || strings.Count(o.stderr, "\n") != 1 || !strings.HasSuffix(o.stderr, "\n") {
					t.Errorf("%s: want exit %d and the one reason line %q... on stderr\n%s", what, c.code, c.want, o)
				}
			}
			o := u.jailRun(t, w, run{args: []string{"-q"}}, c.command)
			line("run -q", o)
			if o.stdout != "" {
				t.Errorf("run -q: stdout %q", o.stdout)
			}
			local := o.stderr
			o = u.jailRun(t, w, run{args: []string{"--json"}}, c.command)
			line("run --json", o)
			var r report
			if err := json.Unmarshal([]byte(o.stdout), &r); err != nil || r.Stderr.Text == nil || *r.Stderr.Text != "" || "tooljail: "+r.Reason+"\n" != o.stderr {
				t.Errorf("run --json: the report's stderr text is not empty, or its reason is not the line (%v)\n%s", err, o)
			}
			for _, flags := range [][]string{{"-q"}, {"--merge-stderr"}, {"--json"}} {
				args := append([]string{"run", "--server", s.sock, "--workdir", w}, flags...)
				o = u.exec(t, run{args: append(args, "--", c.command), dir: w})
				line("run --server "+flags[0], o)
				if flags[0] != "--json" && o.stderr != local {
					t.Errorf("run --server %s: stderr %q, jailed here %q", flags[0], o.stderr, local)
				}
			}
			rep := s.call(t, req{Argv: []string{c.command}, Workdir: w, Stream: true})
			if rep.report == nil || rep.report.ExitCode != c.code || rep.streamed("stderr") != local || rep.streamed("stdout") != "" {
				t.Errorf("served, streamed: want the reason line as the stderr stream\n%s", rep)
			}
		}
	})
}

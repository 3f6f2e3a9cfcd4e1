package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// With --json the supervisor's memory stays within about twice the output
// limit whatever the bytes are (issue 14: 16 MiB of \x01 made 100 MB of
// JSON and took 634 MB; ASCII 122 MB): the text is captured once and
// escaped into the report as it is written. The report is valid JSON and
// gives the bytes back, as base64 when they are not UTF-8.
func TestJSONMemoryBound(t *testing.T) {
	const limit = 16 << 20
	// What the supervisor may take: the text once, a buffer growing to it
	// (by doubling) and its own 10 MiB or so.
	const bound = 2*limit + 24<<20
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		for _, c := range []struct {
			name string
			n    int
			b    byte
			want func() string
		}{
			{"control", limit, 0x01, func() string { return strings.Repeat("\x01", limit) }},
			{"ascii", limit, 'a', func() string { return strings.Repeat("a", limit) }},
			{"invalid", limit, 0xff, func() string { return strings.Repeat("\xff", limit) }},
			{"truncated", limit + 8<<20, 0x01, func() string {
				return strings.Repeat("\x01", limit) +
					"\n[tooljail: 8388608 bytes over the output limit dropped; the last 4096 follow]\n" +
					strings.Repeat("\x01", 4096)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				// No caps: the measuring helper shares the run's
				// cgroup (a delegated one in the VM guests), where
				// tooljail cannot enable controllers, and the memory
				// measured is the supervisor's, which no cap counts.
				args := append([]string{"run", "--workdir", w, "--json", "--output-limit", strconv.Itoa(limit), "--allow-degraded", "cgroup"}, degradedFlags(u)...)
				args = append(args, "--", filepath.Join(w, "tjhelper"), "outputbyte", strconv.Itoa(c.n), strconv.Itoa(int(c.b)))
				out, rss := u.execRSS(t, w, args)
				t.Logf("peak RSS %d MiB, report %d MiB", rss>>20, len(out)>>20)
				if rss > bound {
					t.Errorf("the supervisor's peak RSS was %d MiB for %d MiB of 0x%02x, over %d MiB (twice the output limit and 24 MiB)",
						rss>>20, c.n>>20, c.b, bound>>20)
				}
				var r report
				if err := json.Unmarshal(out, &r); err != nil {
					t.Fatalf("--json stdout is not the report: %v (%d bytes: %.300q)", err, len(out), out)
				}
				// Not UTF-8: base64 in the text's place.
				if r.Stdout.Base64 != nil && r.Stdout.Text == nil {
					b, err := base64.StdEncoding.DecodeString(*r.Stdout.Base64)
					if err != nil {
						t.Fatal(err)
					}
					text := string(b)
					r.Stdout.Text = &text
				}
				if r.Stdout.Bytes != int64(c.n) || r.Stdout.Truncated != (c.n > limit) || r.Stdout.Text == nil {
					t.Fatalf("stdout %d bytes, truncated %v, text or base64 %v", r.Stdout.Bytes, r.Stdout.Truncated, r.Stdout.Text != nil)
				}
				if got, want := *r.Stdout.Text, c.want(); got != want {
					t.Errorf("the text does not come back: %d bytes, want %d: %.80q...%.80q", len(got), len(want), got, got[max(0, len(got)-80):])
				}
				// At most six bytes of JSON for a byte of text, or
				// four for three of base64 (alone) when it is not UTF-8.
				size := 6*(limit+4096+128) + 8192
				if c.b == 0xff {
					size = 4*(limit+2)/3 + 8192
				} else if r.Stdout.Base64 != nil {
					t.Errorf("base64 for UTF-8 output")
				}
				if len(out) > size {
					t.Errorf("report of %d bytes", len(out))
				}
			})
		}
	})
}

// execRSS runs tooljail as u with args and returns its stdout, checked to
// be a run that exited 0, and the peak resident set of tooljail (wait4's
// rusage: the largest of it and of what it waited for), which the helper
// measures (see its maxrss action).
func (u *user) execRSS(t *testing.T, dir string, args []string) ([]byte, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute*slow)
	defer cancel()
	d := u.dir(t)
	outFile, err := os.CreateTemp(d, "stdout-")
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	rssFile := filepath.Join(d, "maxrss")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helperBin, append([]string{"maxrss", rssFile, tooljailBin}, args...)...)
	cmd.Dir = dir
	cmd.Env = u.environ(nil)
	cmd.Stdout, cmd.Stderr = outFile, &stderr
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if cmd.Process != nil {
		rc.check(t, cmd.Process.Pid)
	} else {
		rc.release()
	}
	desc := fmt.Sprintf("tooljail %s\nstderr: %q", strings.Join(args, " "), stderr.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, desc)
	}
	out, err := os.ReadFile(outFile.Name())
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(outFile.Name())
	b, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatalf("%v\n%s", err, desc)
	}
	rss, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatalf("maxrss %q: %v", b, err)
	}
	return out, rss
}

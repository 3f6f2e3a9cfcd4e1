package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The report's facts a user can act on, and the summary lines that name
// them: processes the command left running (killed at its end), the jail's
// tmpfs mounts that filled up, and the allow mode's upstream failures.

// notesReport is what these tests read of the report beyond report.
type notesReport struct {
	KilledLeftover *int64 `json:"killed_leftover_processes"`
	FullMounts     []struct {
		Path          string `json:"path"`
		SizeBytes     int64  `json:"size_bytes"`
		PeakUsedBytes int64  `json:"peak_used_bytes"`
		Full          string `json:"full"`
		RaiseWith     string `json:"raise_with"`
	} `json:"full_mounts"`
	Network []struct {
		Proto    string `json:"proto"`
		Host     string `json:"host"`
		Port     int    `json:"port"`
		Decision string `json:"decision"`
	} `json:"network"`
}

func (o *outcome) notes(t *testing.T) notesReport {
	t.Helper()
	var r notesReport
	if err := json.Unmarshal(o.reportRaw, &r); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	return r
}

// summaryLine is the "tooljail: " line on stderr, "" when there is none.
func (o *outcome) summaryLine() string {
	for _, l := range strings.Split(o.stderr, "\n") {
		if s, ok := strings.CutPrefix(l, "tooljail: "); ok {
			return s
		}
	}
	return ""
}

// A shell that starts two sleeps in the background and exits leaves two
// processes, which the end of the run kills and counts, and the summary
// says so; a command that leaves nothing counts 0 and prints no line; a
// run killed for its timeout counts nothing (the field is absent).
func TestLeftoverProcessesCounted(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		two := u.jailRun(t, w, run{}, "/bin/sh", "-c", "sleep 100 & sleep 100 & exit 0")
		if two.code != 0 {
			t.Fatalf("want exit 0\n%s", two)
		}
		if n := two.notes(t).KilledLeftover; n == nil || *n != 2 {
			t.Errorf("killed_leftover_processes %v, want 2\n%s", n, two)
		}
		if s := two.summaryLine(); !strings.Contains(s, "killed 2 background processes still running when the command exited") {
			t.Errorf("summary %q does not name the 2 processes killed", s)
		}
		none := u.jailRun(t, w, run{}, "/bin/sh", "-c", "sleep 0 & wait; exit 0")
		if n := none.notes(t).KilledLeftover; none.code != 0 || n == nil || *n != 0 {
			t.Errorf("killed_leftover_processes %v, want 0\n%s", n, none)
		}
		if s := none.summaryLine(); s != "" {
			t.Errorf("a run that left nothing has a summary line %q", s)
		}
		timeout := u.jailRun(t, w, run{args: []string{"--timeout", "200ms"}}, "/bin/sh", "-c", "sleep 100 & sleep 100")
		if n := timeout.notes(t).KilledLeftover; timeout.code != 124 || n != nil {
			t.Errorf("a run killed for its timeout: killed_leftover_processes %v, want absent\n%s", n, timeout)
		}
	})
}

// A write that fills one of the jail's tmpfs mounts is named with how to
// raise it: /tmp (--tmpfs), HOME (home_size), /dev/shm (fixed); also when
// the command removes what it wrote before it ends, as pip does with its
// temporary files. A run that stays well within them names none. (Sized by
// the memory limit, as by default, /tmp and HOME reach the limit first:
// TestTmpfsSizedByMemory.)
func TestFullTmpfsNamed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		prof := filepath.Join(u.dir(t), "home64.toml")
		if err := os.WriteFile(prof, []byte("extends = \"default\"\n[filesystem]\nhome_size = \"64M\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name, path, script, raise, line string
			size                            int64
		}{
			{"tmp", "/tmp", "head -c 104857600 /dev/zero > /tmp/x", "--tmpfs /tmp:SIZE", "/tmp (8 MiB tmpfs) filled up: raise it with --tmpfs /tmp:SIZE", 8 << 20},
			// Full for a second, then emptied: the init's samples see it.
			{"tmp removed", "/tmp", "head -c 104857600 /dev/zero > /tmp/x; sleep 1; rm /tmp/x", "--tmpfs /tmp:SIZE", "/tmp (8 MiB tmpfs) filled up", 8 << 20},
			{"home", "/home/sandbox", `head -c 104857600 /dev/zero > "$HOME/x"`, "home_size", "/home/sandbox (64 MiB tmpfs) filled up: raise it with home_size", 64 << 20},
			{"dev shm", "/dev/shm", "head -c 104857600 /dev/zero > /dev/shm/x", "", "/dev/shm (64 MiB tmpfs) filled up (its size is fixed)", 64 << 20},
		} {
			o := u.jailRun(t, w, run{args: []string{"--profile", prof, "--tmpfs", "/tmp:8M"}}, "/bin/sh", "-c", c.script)
			r := o.notes(t)
			if len(r.FullMounts) != 1 {
				t.Errorf("%s: full_mounts %+v, want %s alone\n%s", c.name, r.FullMounts, c.path, o)
				continue
			}
			m := r.FullMounts[0]
			if m.Path != c.path || m.SizeBytes != c.size || m.PeakUsedBytes != c.size || m.Full != "space" || !strings.Contains(m.RaiseWith, c.raise) || (c.raise == "") != (m.RaiseWith == "") {
				t.Errorf("%s: full_mounts %+v, want %s of %d bytes, full of data, raised with %q", c.name, m, c.path, c.size, c.raise)
			}
			if s := o.summaryLine(); !strings.Contains(s, c.line) {
				t.Errorf("%s: summary %q, want %q in it", c.name, s, c.line)
			}
		}
		o := u.jailRun(t, w, run{args: []string{"--tmpfs", "/tmp:8M"}}, "/bin/sh", "-c", `head -c 1048576 /dev/zero > /tmp/x && head -c 1048576 /dev/zero > "$HOME/x"`)
		if r := o.notes(t); o.code != 0 || len(r.FullMounts) != 0 || o.summaryLine() != "" {
			t.Errorf("a run within its mounts: full_mounts %+v, summary %q\n%s", r.FullMounts, o.summaryLine(), o)
		}
	})
}

// The allow mode's upstream failures get a summary line as refusals do: a
// name on the list that does not resolve (dns failed), an allowed address
// where nothing listens (connect failed). The client sees only the
// proxy's 502.
func TestNetAllowUpstreamFailuresNamed(t *testing.T) {
	hooks := testhooksBinary(t)
	eachUser(t, func(t *testing.T, u *user) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close() // nothing listens there now
		w := u.workdir(t)
		flags := []string{"--net", "allow", "--allow-host", fmt.Sprintf("127.0.0.1:%d", port), "--allow-host", fmt.Sprintf("nowhere.tooljail.test:%d", port)}
		o := u.jailRun(t, w, run{args: flags, bin: hooks, env: []string{"TOOLJAIL_TEST_HOSTS=good.tooljail.test=127.0.0.1"}},
			filepath.Join(w, "tjhelper"),
			"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://nowhere.tooljail.test:%d/", port), ";",
			"httpget", "http://127.0.0.1:3128", fmt.Sprintf("http://127.0.0.1:%d/", port))
		o.ok(t, 2)
		for i := range 2 {
			var v httpValue
			o.value(t, i, &v)
			if v.Status != 502 {
				t.Errorf("request %d: %+v, want the proxy's 502", i, v)
			}
		}
		want := map[string]string{"nowhere.tooljail.test": "dns failed", "127.0.0.1": "connect failed"}
		for _, e := range o.notes(t).Network {
			if d, ok := want[e.Host]; ok && e.Port == port && e.Decision == d {
				delete(want, e.Host)
			}
		}
		if len(want) > 0 {
			t.Errorf("the report's network entries lack %v\n%s", want, o)
		}
		s := o.summaryLine()
		for _, part := range []string{
			"2 upstream failure(s), allowed but not reached",
			fmt.Sprintf("nowhere.tooljail.test:%d (dns failed)", port),
			fmt.Sprintf("127.0.0.1:%d (connect failed)", port),
		} {
			if !strings.Contains(s, part) {
				t.Errorf("summary %q lacks %q", s, part)
			}
		}
	})
}

// A served run (a warm jail) reports the same: the processes it left,
// killed and counted, and a tmpfs filled up (/dev/shm, of a fixed size:
// /tmp is as large as the memory limit).
func TestServedReportNotes(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		w := u.workdir(t)
		r := s.call(t, req{Argv: []string{"/bin/sh", "-c", "sleep 100 & sleep 100 & head -c 104857600 /dev/zero > /dev/shm/x; exit 0"}, Workdir: w})
		var n notesReport
		if err := json.Unmarshal(r.reportRaw, &n); err != nil {
			t.Fatalf("report: %v\n%s", err, r)
		}
		if n.KilledLeftover == nil || *n.KilledLeftover != 2 {
			t.Errorf("killed_leftover_processes %v, want 2\n%s", n.KilledLeftover, r)
		}
		if len(n.FullMounts) != 1 || n.FullMounts[0].Path != "/dev/shm" || n.FullMounts[0].Full != "space" {
			t.Errorf("full_mounts %+v, want /dev/shm full\n%s", n.FullMounts, r)
		}
	})
}

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execFDRun runs tooljail with args, its --exec-fd being fd 3, a pipe the
// test reads while the run goes on: once it has read the exec line it
// makes the file go in w, which the command waits for. It returns the
// outcome and what the pipe said.
func execFDRun(t *testing.T, u *user, w string, args []string) (*outcome, string) {
	t.Helper()
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	said := make(chan string, 1)
	go func() {
		var got []byte
		buf := make([]byte, 64)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if string(got) == "exec\n" {
				os.WriteFile(filepath.Join(w, "go"), nil, 0o666)
			}
			if err != nil { // io.EOF: tooljail closed it
				said <- string(got)
				return
			}
		}
	}()
	o := u.exec(t, run{args: args, dir: w, extraFiles: []*os.File{wr}})
	wr.Close()
	os.Remove(filepath.Join(w, "go"))
	return o, <-said
}

// --exec-fd says "exec" once the command has been exec'd, before it
// ends (it waits for a file the test makes only on that line; without
// it the run's timeout ends it), jailed here and on a server, and the
// descriptor never reaches the jail (the command's fd 3); for a
// command not found it says nothing, and tooljail leaves the reason to
// its reader: nothing on stderr. A descriptor that is not open for
// writing is refused before anything runs.
func TestExecFD(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		s := u.startServer(t, "")
		wait := []string{"--timeout", "60s", "--", "/bin/sh", "-c", "[ -e /proc/$$/fd/3 ] && echo fd 3 reached the jail; while [ ! -e go ]; do sleep 0.01; done; echo ran"}
		var degraded []string
		for _, d := range u.degraded {
			degraded = append(degraded, "--allow-degraded", d)
		}
		local := append([]string{"run", "--workdir", w, "--exec-fd", "3"}, degraded...)
		served := []string{"run", "--server", s.sock, "--workdir", w, "--exec-fd", "3"}
		for name, flags := range map[string][]string{"here": local, "served": served} {
			o, said := execFDRun(t, u, w, append(flags[:len(flags):len(flags)], wait...))
			if o.code != 0 || o.stdout != "ran\n" || said != "exec\n" {
				t.Errorf("%s: the pipe said %q; want exec and exit 0 with ran\n%s", name, said, o)
			}
			o, said = execFDRun(t, u, w, append(flags[:len(flags):len(flags)], "--", "no-such-program-tj"))
			if o.code != 127 || said != "" || o.stderr != "" {
				t.Errorf("%s, not found: the pipe said %q, stderr %q; want nothing on either and exit 127\n%s", name, said, o.stderr, o)
			}
		}
		// Without --exec-fd the reason is on stderr, as before.
		o := u.exec(t, run{args: append(append([]string{"run", "--workdir", w}, degraded...), "--", "no-such-program-tj"), dir: w})
		if o.code != 127 || !strings.Contains(o.stderr, "no-such-program-tj: command not found in the jail") {
			t.Errorf("not found without --exec-fd: exit %d, stderr %q", o.code, o.stderr)
		}
		ro, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		for what, r := range map[string]run{
			"not open":  {args: []string{"run", "--exec-fd", "9", "--", "true"}, dir: w},
			"read-only": {args: []string{"run", "--exec-fd", "3", "--", "true"}, dir: w, extraFiles: []*os.File{ro}},
			"stderr":    {args: []string{"run", "--exec-fd", "2", "--", "true"}, dir: w},
		} {
			if o := u.exec(t, r); o.code != 125 || !strings.Contains(o.stderr, "exec-fd") {
				t.Errorf("--exec-fd %s: exit %d, stderr %q; want 125 naming the flag", what, o.code, o.stderr)
			}
		}
	})
}

package jail_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tooljail/tooljail/jail"
)

// waitExecCase runs cmd (its command one that reads stdin to its end, or
// one that cannot be executed) and checks WaitExec against os/exec's
// Start: nil while the command still runs, which it can only do until
// the test closes its stdin; else the setup error of code want, the
// same that Wait returns.
func waitExecCase(t *testing.T, cmd *jail.Cmd, want int) {
	t.Helper()
	r, w := io.Pipe()
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	got := make(chan error, 1)
	go func() { got <- cmd.WaitExec() }()
	var execErr error
	select {
	case execErr = <-got:
	case <-time.After(time.Minute):
		// Not a timing claim: a WaitExec that waits for the command's
		// end waits for this close.
		w.Close()
		t.Fatalf("WaitExec did not return while the command ran; after its end: %v", <-got)
	}
	w.Close()
	res, err := cmd.Wait()
	if want == 0 {
		if execErr != nil || err != nil || res.ExitCode != 0 {
			t.Fatalf("WaitExec %v; Wait %v %+v", execErr, err, res)
		}
		if cmd.WaitExec() != nil {
			t.Errorf("WaitExec after Wait: %v", cmd.WaitExec())
		}
		return
	}
	var se *jail.SetupError
	if !errors.As(execErr, &se) || se.Code != want || execErr != err || res.ExitCode != want {
		t.Fatalf("WaitExec %v, Wait %v (exit %d); want the setup error of exit %d from both", execErr, err, res.ExitCode, want)
	}
}

// WaitExec returns once the command has been exec'd, as os/exec's Start
// does, on every way a command starts: cold, in a warm jail, as a
// session's call; and says why when it could not be.
func TestWaitExec(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"runs", []string{"/bin/cat"}, 0},
		{"not found", []string{"no-such-program-tj"}, jail.ExitNotFound},
		{"not executable", []string{noexec}, jail.ExitNotExecutable},
	}
	for _, c := range cases {
		t.Run("cold/"+c.name, func(t *testing.T) {
			waitExecCase(t, jail.Command(warmSpec(t, dir, nil, c.args...)), c.want)
		})
		t.Run("warm/"+c.name, func(t *testing.T) {
			spec := warmSpec(t, dir, nil, c.args...)
			cmd, err := prepare(t, spec).Command(spec)
			if err != nil {
				t.Fatal(err)
			}
			waitExecCase(t, cmd, c.want)
		})
	}
	s := startSession(t, dir, jail.SessionLimits{})
	for range 2 { // a call's exec is not the next call's
		for _, c := range cases {
			t.Run("session/"+c.name, func(t *testing.T) {
				sp := s.Spec()
				sp.Args = c.args
				cmd, err := s.Command(sp)
				if err != nil {
					t.Fatal(err)
				}
				waitExecCase(t, cmd, c.want)
			})
		}
	}
	if err := jail.Command(warmSpec(t, dir, nil, "true")).WaitExec(); err == nil {
		t.Error("WaitExec before Start: nil")
	}
}

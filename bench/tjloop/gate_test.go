package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// echo with -gate: "ready", then the bytes back after the start byte, then
// the result line; it exits once stdin closes.
func TestGateEcho(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TJLOOP_TEST_CHILD=main", "TJLOOP_ARGS=-gate echo 3")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		in.Close()
		if cmd.ProcessState == nil {
			cmd.Wait()
		}
	}()
	r := bufio.NewReader(out)
	if l, err := r.ReadString('\n'); l != "ready\n" {
		t.Fatalf("first line %q, %v; want ready", l, err)
	}
	in.Write([]byte("gabc"))
	echo := make([]byte, 3)
	for i := range echo {
		if echo[i], err = r.ReadByte(); err != nil {
			t.Fatal(err)
		}
	}
	l, _ := r.ReadString('\n')
	if string(echo) != "abc" || !regexp.MustCompile(`^ns \d+ cpu_ns \d+\n$`).MatchString(l) {
		t.Errorf("echo %q, result %q", echo, l)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("tjloop did not exit cleanly once stdin closed: %v", err)
	}
}

// Outside a jail keyctl runs (ENOKEY): the denied loop refuses to report.
func TestDeniedOutsideJail(t *testing.T) {
	out, err := runMain(t, "denied 10")
	if err == nil || !strings.Contains(stderrOf(err), "want EPERM") {
		t.Errorf("tjloop denied 10 outside a jail: %q, %v (%s)", out, err, stderrOf(err))
	}
}

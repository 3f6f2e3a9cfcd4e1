package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tooljail/tooljail/serve"
)

func TestServeBadInput(t *testing.T) {
	for name, args := range map[string][]string{
		"unknown flag":    {"serve", "--no-such-flag", "2"},
		"warm twice":      {"serve", "--warm", "2", "--warm", "3"},
		"argument":        {"serve", "extra"},
		"unknown profile": {"serve", "--profile", "no-such-profile"},
		"socket twice":    {"serve", "--socket", "/tmp/a", "--socket", "/tmp/b"},
		"empty profile":   {"serve", "--profile", ""},
		"max-runs twice":  {"serve", "--max-runs", "2", "--max-runs", "3"},
	} {
		var stdout, stderr bytes.Buffer
		code := dispatch(args, &stdout, &stderr)
		if code != 125 || strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "tooljail: ") {
			t.Errorf("%s: exit %d, stderr %q", name, code, stderr.String())
		}
	}
}

// TestServeLiveSocket: a second server on a live socket exits 125 with one
// line that says so, and leaves the first one serving.
func TestServeLiveSocket(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	l, err := serve.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var stdout, stderr bytes.Buffer
	code := dispatch([]string{"serve", "--socket", path}, &stdout, &stderr)
	want := fmt.Sprintf("tooljail: a server is already listening on %s (pid %d holds %s.lock)", path, os.Getpid(), path)
	if code != 125 || !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q; want 125 and %q", code, stderr.String(), want)
	}
}

// TestServeMaxRunsFlag: a --max-runs that is not a number from 1 to 1024
// is exit 125, one line naming the flag, before the socket is touched.
func TestServeMaxRunsFlag(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	for _, v := range []string{"0", "-1", "1025", "x", "1.5", ""} {
		var stdout, stderr bytes.Buffer
		code := dispatch([]string{"serve", "--socket", path, "--max-runs", v}, &stdout, &stderr)
		if code != 125 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "max-runs") || !strings.Contains(stderr.String(), "1 to 1024") {
			t.Errorf("--max-runs %q: exit %d, stderr %q; want 125 and one line naming the flag and its range", v, code, stderr.String())
		}
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket was touched: %v", err)
	}
}

// TestServeWarmFlag: a --warm that is not a number from 0 to 16 is exit
// 125, one line naming the flag, before the socket is touched.
func TestServeWarmFlag(t *testing.T) {
	path := filepath.Join(privateDir(t), "sock")
	for _, v := range []string{"-1", "17", "x", "1.5", ""} {
		var stdout, stderr bytes.Buffer
		code := dispatch([]string{"serve", "--socket", path, "--warm", v}, &stdout, &stderr)
		if code != 125 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "warm") || !strings.Contains(stderr.String(), "0 to 16") {
			t.Errorf("--warm %q: exit %d, stderr %q; want 125 and one line naming the flag and its range", v, code, stderr.String())
		}
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket was touched: %v", err)
	}
	for v, want := range map[string]int{"0": 0, "2": 2, "16": 16} {
		if n, err := warmValue(v); err != nil || n != want {
			t.Errorf("warmValue(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
}

func TestMaxRunsValue(t *testing.T) {
	for v, want := range map[string]int{"1": 1, "64": 64, "1024": 1024, "0": -1, "1025": -1, "x": -1, " 2": -1} {
		n, err := maxRunsValue(v)
		if want < 0 && err == nil || want >= 0 && (err != nil || n != want) {
			t.Errorf("maxRunsValue(%q) = %d, %v; want %d", v, n, err, want)
		}
	}
}

// TestServeSignalDrains serves a run, then SIGTERM: the running call ends
// on its own, the server exits 0 and removes its socket.
func TestServeSignalDrains(t *testing.T) {
	dir := privateDir(t)
	path := filepath.Join(dir, "sock")
	audit := filepath.Join(dir, "audit.log")
	args := []string{"serve", "--socket", path, "--audit-log", audit}
	if os.Geteuid() != 0 {
		// cgroup v1 has no delegation: a user's server serves a profile
		// that runs without the caps there.
		p := filepath.Join(dir, "user.toml")
		os.WriteFile(p, []byte("extends = \"default\"\nallow_degraded = [\"cgroup\"]\n"), 0o644)
		args = append(args, "--profile", p)
	}
	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() { exited <- dispatch(args, &stdout, &stderr) }()
	var c *serve.Client
	for deadline := time.Now().Add(10 * time.Second); c == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no server: %s", stderr.String())
		}
		c, _ = serve.Dial(path)
	}
	res := make(chan error, 1)
	running := make(chan struct{})
	var once sync.Once
	var streamed bytes.Buffer // only the client's goroutine writes it
	c.OnStream = func(_ string, data []byte) {
		streamed.Write(data)
		once.Do(func() { close(running) })
	}
	go func() {
		r, err := c.Run(context.Background(), serve.Request{Argv: []string{"/bin/sh", "-c", "echo started; sleep 0.5; echo done"}})
		if err == nil && (r.Stdout.Bytes != 13 || r.Stdout.Text != nil || streamed.String() != "started\ndone\n") {
			err = fmt.Errorf("the drained run (profile %s): %s: %s; streamed %q", r.Profile, r.Status, r.Reason, streamed.String())
		}
		res <- err
	}()
	select {
	case <-running:
	case err := <-res:
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-exited
		t.Fatalf("the run ended before it started: %v", err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit after SIGTERM")
	}
	if err := <-res; err != nil {
		t.Errorf("the running call: %v", err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is left: %v", err)
	}
	if b, _ := os.ReadFile(audit); !bytes.Contains(b, []byte(`"status":"exited"`)) {
		t.Errorf("audit log: %s", b)
	}
}

// privateDir is a temporary directory only its owner can enter, as a
// socket's directory must be.
func privateDir(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

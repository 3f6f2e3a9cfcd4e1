package seccomp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A monitor that cannot serve its listener says so through OnFail, once,
// and Err: its caller ends the run instead of leaving denied calls waiting
// for an answer. A pipe that has data stands for a listener whose receive
// fails.
func TestMonitorOnFail(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	failed := make(chan error, 2)
	m := NewMonitor(r, MonitorOptions{OnFail: func(err error) { failed <- err }})
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-failed:
		if err == nil {
			t.Fatal("OnFail called with nil")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnFail not called for a listener that cannot be read")
	}
	m.Stop()
	if m.Err() == nil {
		t.Error("Err is nil after a failure")
	}
	select {
	case err := <-failed:
		t.Errorf("OnFail called twice (%v)", err)
	default:
	}
}

// Until its first notification the monitor waits in the Go runtime's
// poller, not on a thread blocked in poll (which holds a P in a system
// call and keeps the runtime's sysmon polling), and Stop ends that wait
// at once. A pipe with nothing in it stands for a quiet listener.
func TestMonitorIdleWaitsInThePoller(t *testing.T) {
	requireAmd64(t) // system call numbers
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	m := NewMonitor(r, MonitorOptions{OnFail: func(err error) { t.Errorf("OnFail: %v", err) }})
	time.Sleep(100 * time.Millisecond)
	tasks, _ := filepath.Glob("/proc/self/task/*/syscall")
	for _, p := range tasks {
		b, _ := os.ReadFile(p)
		if f := strings.Fields(string(b)); len(f) > 0 && (f[0] == "7" || f[0] == "271") {
			t.Errorf("a thread waits in poll (%s: %s)", p, b)
		}
	}
	start := time.Now()
	if v := m.Stop(); len(v) != 0 {
		t.Errorf("violations from a quiet listener: %v", v)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Stop took %v", d)
	}
	if m.Err() != nil {
		t.Errorf("Err after Stop: %v", m.Err())
	}
}

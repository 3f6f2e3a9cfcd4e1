package seccomp

import (
	"os"
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

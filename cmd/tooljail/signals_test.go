package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

// A signal this process ignores is left ignored by notify and
// notifyContext: it neither arrives nor cancels, even when it was the only
// one asked for (signal.Notify without signals would relay every one). A
// signal not ignored still cancels.
func TestNotifyLeavesIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGWINCH)
	defer signal.Reset(syscall.SIGWINCH)

	c := make(chan os.Signal, 1)
	notify(c, syscall.SIGWINCH)
	defer signal.Stop(c)
	ctx, stop := notifyContext(context.Background(), syscall.SIGWINCH, syscall.SIGUSR1)
	defer stop()

	syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	// A delivered signal reaches its channel within microseconds; the
	// wait only gives it the chance.
	select {
	case s := <-c:
		t.Fatalf("notify relayed %v, which this process ignores", s)
	case <-ctx.Done():
		t.Fatal("notifyContext was cancelled by a signal this process ignores")
	case <-time.After(200 * time.Millisecond):
	}
	if !signal.Ignored(syscall.SIGWINCH) {
		t.Error("SIGWINCH is no longer ignored")
	}

	syscall.Kill(os.Getpid(), syscall.SIGUSR1)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGUSR1, not ignored, did not cancel notifyContext")
	}
}

package cgroup

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// signalAll sends SIGKILL to every pid list returns and says how many it
// signalled. ESRCH (already gone) is not an error.
func signalAll(list func() ([]int, error)) (int, error) {
	pids, err := list()
	if err != nil {
		if isNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	n := 0
	self := os.Getpid()
	for _, p := range pids {
		// The supervisor shows up in a v1 group while one of its threads
		// is inside (Group.JoinThread): never kill it.
		if p <= 0 || p == self {
			continue
		}
		if err := unix.Kill(p, unix.SIGKILL); err == nil {
			n++
		} else if !errors.Is(err, unix.ESRCH) {
			return n, fmt.Errorf("kill %d: %w", p, err)
		}
	}
	return n, nil
}

// settleTimeout bounds the waits for a killed group to empty and for its
// directory to go (rmdirRetry). Killed processes take a few milliseconds
// to leave; the bound is for a loaded host, where that can take seconds,
// and for processes the kernel cannot kill at once (in uninterruptible
// sleep), after which the caller is told what is left.
const settleTimeout = 10 * time.Second

// waitEmpty SIGKILLs what list returns until it returns nothing, for up to
// settleTimeout. A process forked between a read and the kill is found
// next round; a process with a pending SIGKILL cannot fork, so this
// converges.
func waitEmpty(list func() ([]int, error), what string) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		pids, err := list()
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s still holds processes %v after SIGKILL", what, pids)
		}
		if _, err := signalAll(func() ([]int, error) { return pids, nil }); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor polls cond for up to a second.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

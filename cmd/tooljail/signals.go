package main

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

// unignored is sigs less those ignored says this process ignores. Go keeps
// an inherited SIG_IGN of SIGHUP and SIGINT (nohup's hangup, a shell's
// background job's interrupt), and signal.Notify would take it over. Left
// alone, such a signal stays ignored here: it neither ends nor cancels
// anything, and a command jailed here inherits it ignored, as from an
// execve.
func unignored(sigs []os.Signal, ignored func(os.Signal) bool) []os.Signal {
	var out []os.Signal
	for _, s := range sigs {
		if !ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// ignoreAsStarted makes this process ignore again those of the signals it
// relays or acts on (forwardedSignals) that it was started ignoring
// (jail.StartIgnored): the Go runtime keeps only SIGHUP and SIGINT ignored
// and puts its handlers over the others, so that a SIGTERM, say, would end
// tooljail where it would not have ended the command run directly. notify
// then leaves them alone.
func ignoreAsStarted(started []os.Signal) {
	var sigs []os.Signal
	for _, s := range forwardedSignals {
		if slices.Contains(started, s) {
			sigs = append(sigs, s)
		}
	}
	if len(sigs) > 0 {
		signal.Ignore(sigs...)
	}
}

// keepIgnoringByHandler is for a server started ignoring SIGHUP (nohup): it
// goes on ignoring it, but by a handler of its own instead of SIG_IGN,
// which the jail's init would keep for every command the server jails. It
// returns what stops the handler.
func keepIgnoringByHandler() (stop func()) {
	if !signal.Ignored(syscall.SIGHUP) {
		return func() {}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-c:
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(c)
		close(done)
	}
}

// notify is signal.Notify for those of sigs this process does not ignore.
// With none left it asks for nothing: signal.Notify without signals would
// relay every signal.
func notify(c chan<- os.Signal, sigs ...os.Signal) {
	if sigs = unignored(sigs, signal.Ignored); len(sigs) > 0 {
		signal.Notify(c, sigs...)
	}
}

// notifyContext is signal.NotifyContext with notify's choice: the context
// is cancelled by the first of sigs this process does not ignore. stop
// cancels it and stops the notification; it may be called again.
func notifyContext(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	c := make(chan os.Signal, 1)
	notify(c, sigs...)
	go func() {
		select {
		case <-c:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		signal.Stop(c)
	}
}

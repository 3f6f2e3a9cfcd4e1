package serve

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail"
)

// An Accept error that passes (a timeout, out of descriptors for a
// moment) makes Serve wait and accept again; any other ends it.
func TestAcceptPassing(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{os.ErrDeadlineExceeded, true},
		{fmt.Errorf("accept: %w", unix.EMFILE), true},
		{fmt.Errorf("accept: %w", unix.ENFILE), true},
		{errors.New("use of closed network connection"), false},
		{fmt.Errorf("accept: %w", unix.EBADF), false},
	} {
		if got := acceptPassing(c.err); got != c.want {
			t.Errorf("%v: passing %v, want %v", c.err, got, c.want)
		}
	}
}

// A session starts with the server's life limits unless it asks for its
// own.
func TestSessionLimits(t *testing.T) {
	for _, c := range []struct {
		op   SessionOp
		want jail.SessionLimits
	}{
		{SessionOp{}, jail.SessionLimits{Idle: DefaultSessionIdle, MaxLife: DefaultSessionMaxLife}},
		{SessionOp{Idle: "30s"}, jail.SessionLimits{Idle: 30 * time.Second, MaxLife: DefaultSessionMaxLife}},
		{SessionOp{Idle: "1m", MaxLife: "2h"}, jail.SessionLimits{Idle: time.Minute, MaxLife: 2 * time.Hour}},
	} {
		if got := sessionLimits(&c.op); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.op, got, c.want)
		}
	}
}

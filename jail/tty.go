package jail

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail/internal/relay"
)

// TTY gives the command a pseudo-terminal instead of pipes: one of the
// jail's own devpts instance (never the caller's terminal), whose peer is
// the command's stdin, stdout and stderr and its controlling terminal
// (stage2.c's tj_open_tty). What the command writes to it, stderr
// included, goes to Cmd.Stdout and is counted, capped and captured as
// Result.Stdout (TTY set; Result.Stderr has Merged set); Cmd.Stdin is
// typed into it, and its end is an end-of-file character. Echo, line
// editing and ^C as SIGINT are the terminal's own (the caller puts its
// own terminal in raw mode, as the CLI does).
type TTY struct {
	// Rows and Cols are the first window size; 0 means 24 by 80.
	Rows, Cols uint16
}

// ttyDefaultRows and ttyDefaultCols are a terminal's size when the
// caller gives none, VT100's.
const ttyDefaultRows, ttyDefaultCols = 24, 80

// ttySize is t's window size with the defaults filled in.
func ttySize(t TTY) (rows, cols uint16) {
	rows, cols = t.Rows, t.Cols
	if rows == 0 {
		rows = ttyDefaultRows
	}
	if cols == 0 {
		cols = ttyDefaultCols
	}
	return rows, cols
}

// ttyEOF is the end-of-file character (VEOF, ^D) the terminal's line
// discipline turns into a read of 0 bytes at the start of a line.
const ttyEOF = 0x04

// ttyEnd is what ends the typed input after what was typed last: one ^D
// at the start of a line, two after a partial one (the first only hands
// the partial line to the reader).
func ttyEnd(typed []byte) []byte {
	if len(typed) == 0 || typed[len(typed)-1] == '\n' {
		return []byte{ttyEOF}
	}
	return []byte{ttyEOF, ttyEOF}
}

// typeInto copies in to the terminal's master, then ends the input with
// ttyEnd; in nil is an empty input (as /dev/null is for pipes).
func typeInto(master io.Writer, in io.Reader) {
	var last [1]byte
	w := &lastByte{w: master, last: last[:0]}
	if in != nil {
		if _, err := io.Copy(w, in); err != nil && !errors.Is(err, io.EOF) {
			return
		}
	}
	master.Write(ttyEnd(w.last))
}

// lastByte is a writer that remembers the last byte written.
type lastByte struct {
	w    io.Writer
	last []byte
}

func (l *lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last = append(l.last[:0], p[n-1])
	}
	return n, err
}

// ttyStdio checks that the Cmd's fields fit a terminal and makes the
// init's stdio for it: /dev/null (stage 2 replaces its 0, 1 and 2 with
// the terminal), with a relay that waits for the master.
func (c *Cmd) ttyStdio(budget *relay.Budget) (*childStdio, error) {
	if c.Stderr != nil && !sameWriter(c.Stderr, c.Stdout) {
		return nil, errors.New("Cmd.TTY sends the command's stderr, the terminal's, to Stdout: leave Stderr nil")
	}
	s, err := placeholderStdio()
	if err != nil {
		return nil, err
	}
	c.relays[0] = relay.NewLate(c.Stdout, budget, c.CaptureOutput)
	return s, nil
}

// gotTTY takes the master stage 2 sent (TJ_REC_TTY), under c.mu: the
// relay reads it, and a copy is typed into and resized.
func (c *Cmd) gotTTY(received *os.File) {
	if c.TTY == nil || c.ttyIn != nil || c.relays[0] == nil {
		received.Close()
		return
	}
	// Non-blocking, so that os.File polls it and a read can be given a
	// deadline (relay.Relay.Cut); received blocking, it would not be.
	master := received
	if fd, err := unix.Dup(int(received.Fd())); err == nil {
		unix.CloseOnExec(fd)
		if unix.SetNonblock(fd, true) == nil {
			master = os.NewFile(uintptr(fd), "tty-master")
			received.Close()
		} else {
			unix.Close(fd)
		}
	}
	fd, err := unix.FcntlInt(master.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		// Without a copy to type into, the command still gets its
		// terminal and its output; its input ends at once.
		c.relays[0].Attach(master)
		return
	}
	c.ttyIn = os.NewFile(uintptr(fd), "tty-master")
	if c.ttyResized {
		c.setWinsize()
	}
	c.relays[0].Attach(master)
	go typeInto(c.ttyIn, c.Stdin)
}

// Resize sets the window size of the command's terminal (Cmd.TTY); the
// kernel sends SIGWINCH to its foreground process group. Before the
// terminal exists the size is kept and set when it does.
func (c *Cmd) Resize(rows, cols uint16) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.TTY == nil {
		return errors.New("jail: Resize of a Cmd without a TTY")
	}
	c.TTY.Rows, c.TTY.Cols = rows, cols
	c.ttyResized = true
	if c.ttyIn == nil {
		return nil
	}
	return c.setWinsize()
}

// setWinsize sets the terminal's size to c.TTY's, under c.mu.
func (c *Cmd) setWinsize() error {
	rows, cols := ttySize(*c.TTY)
	return unix.IoctlSetWinsize(int(c.ttyIn.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
}

// closeTTY lets go of the terminal's copy once the run is over: typing
// into it stops.
func (c *Cmd) closeTTY() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ttyIn != nil {
		c.ttyIn.Close()
		c.ttyIn = nil
	}
}

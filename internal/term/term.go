// Package term puts the caller's terminal in raw mode for a run with a
// terminal of its own (tooljail run --tty) and reads its size: the jail's
// terminal does the echo, line editing and ^C, so the caller's must pass
// every byte through untouched.
package term

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// Size is fd's window size; ok is false when fd is no terminal or the
// size is unknown (0 by 0).
func Size(fd int) (rows, cols uint16, ok bool) {
	ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	if err != nil || ws.Row == 0 || ws.Col == 0 {
		return 0, 0, false
	}
	return ws.Row, ws.Col, true
}

// State is a terminal's settings, to restore.
type State struct {
	fd  int
	old unix.Termios
}

// MakeRaw puts fd in raw mode (as cfmakeraw(3)) and returns its settings
// before; Restore puts them back.
func MakeRaw(fd int) (*State, error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read the terminal's settings: %w", err)
	}
	raw := rawOf(*old)
	// TCSETSW: after what was written is out, so that a prompt printed
	// before is not cut off.
	if err := unix.IoctlSetTermios(fd, unix.TCSETSW, &raw); err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	return &State{fd: fd, old: *old}, nil
}

// Restore puts the terminal's settings back as MakeRaw found them.
func (s *State) Restore() error {
	if err := unix.IoctlSetTermios(s.fd, unix.TCSETSW, &s.old); err != nil {
		return fmt.Errorf("restore the terminal's settings: %w", err)
	}
	return nil
}

// rawOf is t in raw mode, as cfmakeraw(3) makes it: no input or output
// processing, no echo, no line editing, no signals from keys, 8-bit
// characters, and a read returns each byte as it comes.
func rawOf(t unix.Termios) unix.Termios {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return t
}

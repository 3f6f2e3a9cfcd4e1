package term

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRawOf(t *testing.T) {
	cooked := unix.Termios{
		Iflag: unix.ICRNL | unix.IXON | unix.BRKINT | unix.IUTF8,
		Oflag: unix.OPOST | unix.ONLCR,
		Lflag: unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN | unix.ECHOE,
		Cflag: unix.CS7 | unix.PARENB | unix.CREAD,
	}
	raw := rawOf(cooked)
	cases := []struct {
		name      string
		got, gone uint32
	}{
		{"no CR to NL, flow control or break", raw.Iflag, unix.ICRNL | unix.IXON | unix.BRKINT},
		{"no output processing", raw.Oflag, unix.OPOST},
		{"no echo, line editing or key signals", raw.Lflag, unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN},
		{"no parity", raw.Cflag, unix.PARENB},
	}
	for _, c := range cases {
		if c.got&c.gone != 0 {
			t.Errorf("%s: flags %#x still have %#x", c.name, c.got, c.got&c.gone)
		}
	}
	if raw.Cflag&unix.CSIZE != unix.CS8 || raw.Cflag&unix.CREAD == 0 {
		t.Errorf("Cflag %#x: want CS8 and CREAD kept", raw.Cflag)
	}
	if raw.Iflag&unix.IUTF8 == 0 || raw.Lflag&unix.ECHOE == 0 {
		t.Errorf("flags raw mode does not touch were changed: %+v", raw)
	}
	if raw.Cc[unix.VMIN] != 1 || raw.Cc[unix.VTIME] != 0 {
		t.Errorf("VMIN %d VTIME %d, want 1 and 0", raw.Cc[unix.VMIN], raw.Cc[unix.VTIME])
	}
}

// TestMakeRawRestore puts a real pseudo-terminal in raw mode and back.
func TestMakeRawRestore(t *testing.T) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	// TIOCGPTPEER's argument is the peer's open flags.
	pfd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		t.Skipf("TIOCGPTPEER: %v", errno)
	}
	p := os.NewFile(uintptr(pfd), "peer")
	defer p.Close()
	fd := int(p.Fd())
	if !IsTerminal(fd) {
		t.Fatal("a pty peer is not a terminal")
	}
	if r, w, err := os.Pipe(); err == nil {
		if IsTerminal(int(r.Fd())) {
			t.Error("a pipe is a terminal")
		}
		r.Close()
		w.Close()
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 101}); err != nil {
		t.Fatal(err)
	}
	if rows, cols, ok := Size(fd); !ok || rows != 33 || cols != 101 {
		t.Errorf("Size = %d, %d, %v; want 33, 101, true", rows, cols, ok)
	}
	before, _ := unix.IoctlGetTermios(fd, unix.TCGETS)
	st, err := MakeRaw(fd)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := unix.IoctlGetTermios(fd, unix.TCGETS)
	if now.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != 0 {
		t.Errorf("after MakeRaw Lflag %#x", now.Lflag)
	}
	if err := st.Restore(); err != nil {
		t.Fatal(err)
	}
	after, _ := unix.IoctlGetTermios(fd, unix.TCGETS)
	if *after != *before {
		t.Errorf("after Restore %+v, want %+v", after, before)
	}
}

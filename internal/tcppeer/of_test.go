package tcppeer

import (
	"bufio"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// accept dials l with dial and returns the server's end.
func accept(t *testing.T, l net.Listener, dial func() (net.Conn, error)) net.Conn {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func listen(t *testing.T, network, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback here: %v", network, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func wantSelf(t *testing.T, s net.Conn) {
	t.Helper()
	o, err := Of(s)
	if err != nil {
		t.Fatalf("Of(%v -> %v): %v", s.RemoteAddr(), s.LocalAddr(), err)
	}
	if want := (Owner{UID: os.Geteuid(), GID: os.Getegid(), PID: os.Getpid()}); o != want {
		t.Errorf("Of(%v -> %v) = %+v, want this process %+v", s.RemoteAddr(), s.LocalAddr(), o, want)
	}
}

// TestOfSelf: a client in this process is named with this process's uid,
// gid and pid, over IPv4, IPv6, and an IPv6 socket to an IPv4 server.
func TestOfSelf(t *testing.T) {
	t.Run("ipv4", func(t *testing.T) {
		l := listen(t, "tcp4", "127.0.0.1:0")
		wantSelf(t, accept(t, l, func() (net.Conn, error) { return net.Dial("tcp", l.Addr().String()) }))
	})
	t.Run("ipv6", func(t *testing.T) {
		l := listen(t, "tcp6", "[::1]:0")
		wantSelf(t, accept(t, l, func() (net.Conn, error) { return net.Dial("tcp", l.Addr().String()) }))
	})
	t.Run("v4-mapped client", func(t *testing.T) {
		l := listen(t, "tcp4", "127.0.0.1:0")
		s := accept(t, l, func() (net.Conn, error) { return dialMapped(l.Addr().(*net.TCPAddr).Port) })
		wantSelf(t, s)
	})
}

// dialMapped connects to 127.0.0.1:port from an IPv6 socket (to
// ::ffff:127.0.0.1), whose entry is in /proc/net/tcp6.
func dialMapped(port int) (net.Conn, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	sa := &unix.SockaddrInet6{Port: port, Addr: netip.MustParseAddr("::ffff:127.0.0.1").As16()}
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "mapped")
	defer f.Close()
	return net.FileConn(f)
}

// TestOfClosed: once the client has closed, no one is named.
func TestOfClosed(t *testing.T) {
	l := listen(t, "tcp4", "127.0.0.1:0")
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c.Close()
	if o, err := Of(s); err == nil {
		t.Errorf("Of a closed client = %+v, want an error", o)
	}
}

// TestOfOtherProcess: a client in another process, of another user when
// this test runs as root, is named with that user and that process.
func TestOfOtherProcess(t *testing.T) {
	if addr := os.Getenv("TCPPEER_TEST_DIAL"); addr != "" {
		return // the client's part runs in TestMain
	}
	l := listen(t, "tcp4", "127.0.0.1:0")
	cmd := exec.Command("/proc/self/exe", "-test.run=^TestOfOtherProcess$")
	cmd.Env = append(os.Environ(), "TCPPEER_TEST_DIAL="+l.Addr().String())
	uid, gid := os.Geteuid(), os.Getegid()
	if uid == 0 {
		uid, gid = 65534, 65534
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close() // the client exits when its stdin closes
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The client says it is connected once its dial returned.
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	o, err := Of(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Owner{UID: uid, GID: gid, PID: cmd.Process.Pid}); o != want {
		t.Errorf("Of(client in process %d) = %+v, want %+v", cmd.Process.Pid, o, want)
	}
}

func TestMain(m *testing.M) {
	if addr := os.Getenv("TCPPEER_TEST_DIAL"); addr != "" {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString(strconv.Itoa(os.Getpid()) + "\n")
		os.Stdin.Read(make([]byte, 1))
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

package initlink

import (
	"bytes"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func seqpacketPair(t *testing.T) (a, b int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

// The supervisor's reader gets each packet whole, with its descriptors
// and the sender's pid, from the poller; the peer's end is an empty
// packet.
func TestRecvPacketFromPoller(t *testing.T) {
	sup, init := seqpacketPair(t)
	if err := unix.SetsockoptInt(sup, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
		t.Fatal(err)
	}
	f, err := PollSocket(sup)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	got := make(chan Packet, 3)
	go func() {
		for {
			p, err := RecvPacket(rc)
			if err != nil {
				t.Error(err)
				return
			}
			got <- p
			if len(p.Data) == 0 {
				return
			}
		}
	}()
	// Sent after the reader waits: it is woken, not polling.
	time.Sleep(50 * time.Millisecond)
	big := bytes.Repeat([]byte{'x'}, 3000)
	if err := unix.Sendmsg(init, big, unix.UnixRights(int(w.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendmsg(init, []byte("two"), nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	unix.Shutdown(init, unix.SHUT_WR)
	p := <-got
	if !bytes.Equal(p.Data, big) || len(p.Files) != 1 || p.PID != os.Getpid() {
		t.Fatalf("first packet: %d bytes, %d files, pid %d (want %d, 1, %d)", len(p.Data), len(p.Files), p.PID, len(big), os.Getpid())
	}
	// The descriptor is the pipe's write end.
	if _, err := p.Files[0].Write([]byte("z")); err != nil {
		t.Fatal(err)
	}
	p.Files[0].Close()
	b := make([]byte, 1)
	if n, _ := r.Read(b); n != 1 || b[0] != 'z' {
		t.Fatalf("the passed descriptor is not the pipe: read %q", b[:n])
	}
	if p := <-got; string(p.Data) != "two" || len(p.Files) != 0 {
		t.Fatalf("second packet %q, %d files", p.Data, len(p.Files))
	}
	if p := <-got; len(p.Data) != 0 {
		t.Fatalf("after the peer's end: %q, want the empty packet", p.Data)
	}
}

// The poller makes the supervisor's end non-blocking for its senders too:
// SendPacket waits for room as a blocking send would, rather than fail
// with EAGAIN when the init has not read what came before.
func TestSendPacketWaitsForRoom(t *testing.T) {
	sup, init := seqpacketPair(t)
	f, err := PollSocket(sup)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg := bytes.Repeat([]byte{'m'}, 4096)
	n := 0
	for ; ; n++ {
		if err := unix.Sendmsg(sup, msg, nil, nil, unix.MSG_NOSIGNAL); err == unix.EAGAIN {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if n > 100000 {
			t.Fatal("the socket never filled: not non-blocking")
		}
	}
	sent := make(chan error, 1)
	go func() { sent <- SendPacket(sup, []byte("last"), nil) }()
	select {
	case err := <-sent:
		t.Fatalf("SendPacket returned %v on a full socket", err)
	case <-time.After(100 * time.Millisecond):
	}
	// A blocking send would go on as soon as one packet's room is free;
	// poll reports room once the queue is down to a quarter of the
	// buffer, so the reader drains it all here, as the init does.
	buf := make([]byte, 8192)
	for i := 0; i < n; i++ {
		if k, _, _, _, err := unix.Recvmsg(init, buf, nil, 0); err != nil || k != len(msg) {
			t.Fatalf("packet %d: %d bytes, %v", i, k, err)
		}
	}
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("SendPacket: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SendPacket still waiting after the queue was drained")
	}
	if k, _, _, _, err := unix.Recvmsg(init, buf, nil, 0); err != nil || string(buf[:k]) != "last" {
		t.Fatalf("last packet %q, %v", buf[:k], err)
	}
}

package proxy

import (
	"bufio"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Chunk sizes of relay. A chunk is one io.CopyN between the two
// connections; large ones keep the Go calls per byte few, and the
// kernel moves a chunk in 1 MiB splices anyway.
const (
	maxChunk = 4 << 20
	// minChunk is the smallest chunk worth a splice under a byte cap,
	// where each costs two more system calls (waiting, counting).
	minChunk = 16 << 10
)

// relay copies src to dst until src ends (io.EOF) or something fails,
// and returns the bytes that reached dst. Its chunks are io.CopyN between
// the two connections themselves, with nothing in between: for two
// *net.TCPConn, Go moves the bytes with splice(2), in the kernel, which
// is what makes a download through the proxy nearly as fast as a direct
// one (a wrapper counting bytes would force a copy through user space).
//
// Under a byte cap the bytes are counted before they move, and only the
// bytes there are: relay waits until src has some, asks the kernel how
// many (inq), reserves them and splices exactly those, so a chunk never
// holds a reservation while it waits for the network, and the cap is as
// exact as with a buffer (send): a chunk that reserve cuts moves what
// fits, then relay fails with errByteLimit. A few bytes (under minChunk)
// go through a buffer.
//
// The idle timeout holds as in connReader: a chunk's read deadline is at
// most an eighth of the idle time away, so a chunk ends at least that
// often to count its progress, and a read that timed out waits on while
// the connection is not idle. A chunk's write deadline is at least 7/8 of
// the idle time away: a write that times out loses the bytes in splice's
// pipe, so it ends the relay.
func (s *session) relay(dst, src net.Conn) (int64, error) {
	r := &connReader{c: src, act: &s.act}
	wd := &s.upWD
	if dst == s.c {
		wd = &s.clientWD
	}
	capped := s.p.lim.MaxBytes > 0
	rc, _ := src.(syscall.Conn)
	var bp *[]byte
	defer func() {
		if bp != nil {
			bufPool.Put(bp)
		}
	}()
	var total int64
	for {
		now := time.Now()
		// Setting a deadline costs a timer update: the read deadline
		// moves when less than half its period is left (or when r.Read
		// set a longer one), the write deadline by steps (refresh).
		if d := r.set.Sub(now); d < s.act.idle/16 || d > s.act.idle/8 {
			r.set = now.Add(s.act.idle / 8)
			src.SetReadDeadline(r.set)
		}
		n, want := int64(0), int64(maxChunk)
		var err error
		if capped {
			want, err = inq(rc)
		}
		switch {
		case err != nil:
		case capped && want < minChunk:
			// A few bytes, the end of the stream, or src cannot say:
			// one buffered round.
			if bp == nil {
				bp = bufPool.Get().(*[]byte)
			}
			m, rerr := r.Read(*bp)
			if m > 0 {
				w, werr := s.send(dst, (*bp)[:m])
				n = int64(w)
				if werr != nil {
					return total + n, werr
				}
			}
			err = rerr
		default:
			want = min(want, maxChunk)
			g := want
			if capped {
				g = int64(s.p.reserve(int(want)))
			}
			if want := now.Add(s.act.idle); refresh(*wd, want, now, s.act.idle) {
				*wd = want
				dst.SetWriteDeadline(want)
			}
			n, err = io.CopyN(dst, src, g)
			if capped && n < g {
				// The chunk failed midway: what did not move is not
				// counted.
				s.p.used.Add(n - g)
			}
			if err == nil && g < want {
				err = errByteLimit
			}
		}
		total += n
		if n > 0 {
			s.act.touch()
		}
		switch {
		case err == nil:
		case isTimeout(err) && time.Now().Before(*wd) && time.Now().Before(s.act.deadline()):
			// The read deadline of the chunk: the connection is not idle.
		default:
			return total, err
		}
	}
}

// inq waits until c has bytes to read, or its end, or an error, and
// returns how many bytes wait in its receive queue (0 at the end, or
// when c is not a socket the kernel can count). It waits under c's read
// deadline.
func inq(c syscall.Conn) (int64, error) {
	if c == nil {
		return 0, nil
	}
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, nil
	}
	var n int
	var ioErr error
	err = rc.Read(func(fd uintptr) bool {
		n, ioErr = unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		if ioErr != nil || n > 0 {
			return true
		}
		// Nothing queued: done if that is the end (or an error), else
		// wait for the poller to say there is something.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN | unix.POLLRDHUP}}
		m, perr := unix.Poll(pfd, 0)
		return perr != nil || m > 0
	})
	if err != nil {
		return 0, err
	}
	if ioErr != nil {
		return 0, nil
	}
	return int64(n), nil
}

// buffered returns the bytes the readers hold already, outermost first:
// the order in which a reader reading through all of them would return
// them. Reading them does not read any further.
func buffered(rs ...*bufio.Reader) []byte {
	var b []byte
	for _, r := range rs {
		p, _ := r.Peek(r.Buffered())
		b = append(b, p...)
		r.Discard(len(p))
	}
	return b
}

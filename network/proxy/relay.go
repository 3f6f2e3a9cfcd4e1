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
	rl := &relayer{s: s, dst: dst, src: src, r: &connReader{c: src, act: &s.act}, wd: &s.upWD, capped: s.p.lim.MaxBytes > 0}
	if dst == s.c {
		rl.wd = &s.clientWD
	}
	rl.rc, _ = src.(syscall.Conn)
	defer rl.release()
	var total int64
	for {
		now := time.Now()
		// Setting a deadline costs a timer update: the read deadline
		// moves when less than half its period is left (or when r.Read
		// set a longer one), the write deadline by steps (refresh).
		if moveReadDeadline(rl.r.set, now, s.act.idle) {
			rl.r.set = now.Add(s.act.idle / 8)
			src.SetReadDeadline(rl.r.set)
		}
		n, writeFailed, err := rl.chunk(now)
		total += n
		if writeFailed {
			return total, err
		}
		if n > 0 {
			s.act.touch()
		}
		if err != nil && !rl.chunkTimedOut(err) {
			return total, err
		}
	}
}

// relayer is one direction of a session's relay, src to dst.
type relayer struct {
	s        *session
	dst, src net.Conn
	r        *connReader  // src, for buffered rounds
	rc       syscall.Conn // src, for inq; nil if it has no descriptor
	wd       *time.Time   // dst's write deadline as last set
	capped   bool         // under a byte cap
	bp       *[]byte      // the buffered rounds' buffer, from bufPool
}

func (rl *relayer) release() {
	if rl.bp != nil {
		bufPool.Put(rl.bp)
	}
}

// moveReadDeadline says whether a read deadline set for now+idle/8 is due:
// less than idle/16 is left, or more than idle/8 (r.Read set a longer one).
func moveReadDeadline(set, now time.Time, idle time.Duration) bool {
	d := set.Sub(now)
	return d < idle/16 || d > idle/8
}

// chunk moves one chunk: spliced, or under a byte cap with a few bytes
// waiting (or the end of the stream, or src cannot say), one buffered
// round. writeFailed says the bytes read could not all be sent: the
// relay ends with err, whatever it is.
func (rl *relayer) chunk(now time.Time) (n int64, writeFailed bool, err error) {
	want := int64(maxChunk)
	if rl.capped {
		if want, err = inq(rl.rc); err != nil {
			return 0, false, err
		}
	}
	if rl.capped && want < minChunk {
		return rl.bufferedRound()
	}
	n, err = rl.splice(now, want)
	return n, false, err
}

// bufferedRound reads what src has into the buffer and sends it, counted
// against the cap (send).
func (rl *relayer) bufferedRound() (n int64, writeFailed bool, err error) {
	if rl.bp == nil {
		rl.bp = bufPool.Get().(*[]byte)
	}
	m, rerr := rl.r.Read(*rl.bp)
	if m == 0 {
		return 0, false, rerr
	}
	w, werr := rl.s.send(rl.dst, (*rl.bp)[:m])
	if werr != nil {
		return int64(w), true, werr
	}
	return int64(w), false, rerr
}

// splice copies up to want bytes (at most maxChunk), under a cap only
// what reserve grants: a chunk that reserve cuts fails with errByteLimit
// after moving what fits.
func (rl *relayer) splice(now time.Time, want int64) (int64, error) {
	want = min(want, maxChunk)
	g := want
	if rl.capped {
		g = int64(rl.s.p.reserve(int(want)))
	}
	if wd := now.Add(rl.s.act.idle); refresh(*rl.wd, wd, now, rl.s.act.idle) {
		*rl.wd = wd
		rl.dst.SetWriteDeadline(wd)
	}
	n, err := io.CopyN(rl.dst, rl.src, g)
	if rl.capped && n < g {
		// The chunk failed midway: what did not move is not counted.
		rl.s.p.used.Add(n - g)
	}
	if err == nil && g < want {
		err = errByteLimit
	}
	return n, err
}

// chunkTimedOut says whether err is only the chunk's read deadline: with
// the write deadline and the session's ahead, the connection is not idle.
func (rl *relayer) chunkTimedOut(err error) bool {
	return isTimeout(err) && time.Now().Before(*rl.wd) && time.Now().Before(rl.s.act.deadline())
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

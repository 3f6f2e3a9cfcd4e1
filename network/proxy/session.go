package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tooljail/tooljail/network/hello"
)

// session is one client connection, from accept to its Event.
type session struct {
	p *Proxy
	c net.Conn
	// cr reads c under the deadlines of the phase: HeaderTimeout for the
	// request, the idle timeout after.
	cr *connReader
	// up is the upstream connection, once open succeeded.
	up net.Conn
	// over: the connection is past MaxConns; its request is read to name
	// it in the event, then refused.
	over bool
	// silent: nothing was received, so there is no event.
	silent bool
	// dialErr is the last connection attempt's error, for SOCKS5's reply.
	dialErr error
	act     activity
	// clientWD and upWD are the write deadlines last set on c and up,
	// each touched by the one goroutine writing there at a time.
	clientWD, upWD time.Time
	ev             Event
}

// activity is when a connection last moved a byte either way: a tunnel
// that downloads is not idle because nothing goes up.
type activity struct {
	idle time.Duration
	last atomic.Int64 // Unix nanoseconds
}

func (a *activity) init(idle time.Duration) {
	a.idle = idle
	a.touch()
}

func (a *activity) touch() { a.last.Store(time.Now().UnixNano()) }

// deadline is when the connection counts as idle.
func (a *activity) deadline() time.Time { return time.Unix(0, a.last.Load()).Add(a.idle) }

// refresh says whether a deadline last set at set should be moved to
// want. Setting one costs a timer update, which for every read and write
// of a download halves the throughput; so an idle deadline moves forward
// only by steps of an eighth of the idle time. A read that times out
// early looks at the activity and waits on; a write may fail after 7/8 of
// the idle time without progress instead of all of it. A deadline that
// has passed is always moved, or a read would time out at once, again and
// again.
func refresh(set, want, now time.Time, idle time.Duration) bool {
	return !set.After(now) || want.Before(set) || want.Sub(set) >= idle/8
}

// connReader reads one side of a connection. With a deadline set it is
// an absolute one (a request must arrive whole in time); without, a read
// waits as long as the connection is not idle.
type connReader struct {
	c        net.Conn
	act      *activity
	deadline atomic.Int64 // Unix nanoseconds; 0: the idle timeout
	stopped  atomic.Bool
	// set is the read deadline last set, by the one reading goroutine.
	set time.Time
}

var errStopped = errors.New("read stopped: the exchange is over")

func (r *connReader) setDeadline(t time.Time) {
	if t.IsZero() {
		r.deadline.Store(0)
		return
	}
	r.deadline.Store(t.UnixNano())
}

// stop makes the current and every later Read return errStopped, from
// another goroutine. The deadline is set before stopped is checked in
// Read, so either Read sees stopped or this deadline wakes it.
func (r *connReader) stop() {
	r.stopped.Store(true)
	r.c.SetReadDeadline(time.Now())
}

func (r *connReader) Read(p []byte) (int, error) {
	for {
		d := r.deadline.Load()
		dl := r.act.deadline()
		if d != 0 {
			dl = time.Unix(0, d)
		}
		if (d != 0 && !dl.Equal(r.set)) || (d == 0 && refresh(r.set, dl, time.Now(), r.act.idle)) {
			r.c.SetReadDeadline(dl)
			r.set = dl
		}
		if r.stopped.Load() {
			return 0, errStopped
		}
		n, err := r.c.Read(p)
		if n > 0 {
			r.act.touch()
		}
		// The other direction may have moved meanwhile: wait on.
		if n == 0 && d == 0 && isTimeout(err) && !r.stopped.Load() && time.Now().Before(r.act.deadline()) {
			continue
		}
		return n, err
	}
}

// write writes all of b to c (s.c or s.up), failing if c takes nothing
// for the idle timeout.
func (s *session) write(c net.Conn, b []byte) (int, error) {
	set := &s.upWD
	if c == s.c {
		set = &s.clientWD
	}
	now := time.Now()
	if want := now.Add(s.act.idle); refresh(*set, want, now, s.act.idle) {
		c.SetWriteDeadline(want)
		*set = want
	}
	n, err := c.Write(b)
	if n > 0 {
		s.act.touch()
	}
	return n, err
}

var errByteLimit = errors.New(ReasonByteLimit)

// send forwards b to dst, counting it against MaxBytes; at the limit it
// sends what fits and fails with errByteLimit.
func (s *session) send(dst net.Conn, b []byte) (int, error) {
	ok := s.p.reserve(len(b))
	n, err := s.write(dst, b[:ok])
	if err == nil && ok < len(b) {
		err = errByteLimit
	}
	return n, err
}

// bufPool holds relay's buffers for the bytes near the byte cap: 128
// KiB, four times io.Copy's, halves the system calls there.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// open decides on t and, if it is allowed, connects to one checked
// address of it (s.up), filling the event's host, port and address. It
// returns the reason of a refusal or failure, or "".
func (s *session) open(t target) string {
	p := s.p
	s.ev.Host, s.ev.Port = t.host, t.port
	if s.over {
		return ReasonConnLimit
	}
	if reason := checkTarget(t, p.cfg.Allow); reason != "" {
		return reason
	}
	if p.exhausted() {
		return ReasonByteLimit
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.lim.ConnectTimeout)
	defer cancel()
	addrs := []netip.Addr{t.ip}
	if !t.ip.IsValid() {
		// The one lookup of this connection: what it returns is checked
		// and connected to, nothing else.
		got, err := p.resolver.LookupNetIP(ctx, "ip", t.host)
		if err != nil || len(got) == 0 {
			return ReasonDNS
		}
		addrs = got
	}
	pass, refused, reason := selectAddrs(addrs, t.port, p.cfg.Allow)
	if reason != "" {
		s.ev.Addr = refused
		return reason
	}
	s.ev.Addr = pass[0]
	for _, a := range pass {
		c, err := p.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.port)).String())
		if err != nil {
			s.dialErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !p.track(c) {
			c.Close()
			s.dialErr = net.ErrClosed
			return ReasonConnect
		}
		s.up, s.ev.Addr = c, a
		return ""
	}
	return ReasonConnect
}

// closeBoth ends the exchange at once; the relays fail and return.
func (s *session) closeBoth() {
	s.c.Close()
	s.up.Close()
}

// closeWrite passes an end of stream on; a connection that cannot
// half-close is closed.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		return
	}
	c.Close()
}

// lingerTime and lingerBytes bound how long and how much a closing
// connection is drained, so that the last response is not lost to a
// reset: closing a socket with unread input makes the kernel send RST,
// which can overtake what was written (net/http does the same).
const (
	lingerTime  = 500 * time.Millisecond
	lingerBytes = 256 << 10
)

// lingerClose half-closes c and reads what the client still sends until
// it closes too, or the bounds above; finish closes c.
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c, lingerBytes)
}

// tunnel relays between the client and s.up after the client was told
// it is connected; pending are the bytes of the client read already,
// past its request. The client's first bytes are held until clientHello
// has judged them; then both directions are relays between the raw
// connections.
func (s *session) tunnel(t target, pending []byte) {
	var down int64
	var downErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		down, downErr = s.relay(s.c, s.up)
		if downErr == io.EOF {
			closeWrite(s.c)
		} else {
			s.closeBoth()
		}
	}()

	pr := bytes.NewReader(pending)
	first, reason := s.clientHello(t, io.MultiReader(pr, s.cr))
	var up int64
	var upErr error
	switch {
	case reason != "":
		s.closeBoth()
	case len(first) == 0:
		// The client closed (or went idle) without a word.
		closeWrite(s.up)
	default:
		// What clientHello did not need of pending goes with it.
		rest, _ := io.ReadAll(pr)
		var n int
		n, upErr = s.send(s.up, append(first, rest...))
		up = int64(n)
		if upErr == nil {
			var m int64
			m, upErr = s.relay(s.up, s.c)
			up += m
		}
		if upErr == io.EOF {
			closeWrite(s.up)
		} else {
			s.closeBoth()
		}
	}
	<-done
	s.ev.BytesUp, s.ev.BytesDown = up, down
	s.ev.Allowed = reason == ""
	s.ev.Reason = reason
	if errors.Is(upErr, errByteLimit) || errors.Is(downErr, errByteLimit) {
		s.ev.Reason = ReasonByteLimit
	}
}

// clientHello reads the client's first bytes and judges them (the
// package comment gives the rule). It returns the bytes read, to be
// forwarded, and a refusal reason or "". No bytes with no reason: the
// client closed or went idle before saying anything.
func (s *session) clientHello(t target, r io.Reader) ([]byte, string) {
	buf := make([]byte, 0, 4<<10)
	// readTo reads until buf holds n bytes, or fails.
	readTo := func(n int) error {
		if n > cap(buf) {
			nb := make([]byte, len(buf), n+1024)
			copy(nb, buf)
			buf = nb
		}
		for len(buf) < n {
			m, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if err != nil {
				return err
			}
		}
		return nil
	}
	// The first bytes may take as long as the client likes.
	err := readTo(1)
	if len(buf) == 0 {
		return nil, ""
	}
	// From there the hello must come in time.
	s.cr.setDeadline(time.Now().Add(s.p.lim.HeaderTimeout))
	defer s.cr.setDeadline(time.Time{})
	// To a name, any TLS record must be the ClientHello: a server reads a
	// record of another type (a ChangeCipherSpec, an alert) and then the
	// hello behind it, which nothing here would have read. Two bytes tell
	// a record (its type and version), so a client that sends one and
	// stops is judged by the one (hello.IsRecord).
	name := !t.ip.IsValid()
	for err == nil && (len(buf) < hello.PeekLen && hello.IsTLS(buf) || name && len(buf) < 2 && hello.IsRecord(buf)) {
		err = readTo(len(buf) + 1)
	}
	if !hello.IsTLS(buf) && !(name && hello.IsRecord(buf)) {
		return buf, notTLS(t)
	}
	for {
		h, perr := hello.Parse(buf)
		if perr == nil {
			return buf, checkHello(t, h)
		}
		if errors.Is(perr, hello.ErrNotHandshake) {
			return buf, ReasonNoHello
		}
		var short *hello.ShortError
		if err != nil || !errors.As(perr, &short) {
			return buf, ReasonBadRequest
		}
		err = readTo(len(buf) + short.Need)
	}
}

// Package relay copies one output stream of a jailed command to where the
// caller wants it, within a byte budget that stdout and stderr share,
// counting every byte, and when capturing keeps a copy: the head that fit
// the budget and, for a stream that went over, a marker line and the tail
// of what was dropped. A source may come late (a terminal's master, which
// stage 2 sends), and a stream may be cut at its command's end while
// processes a session's call kept still hold it open.
//
// It knows nothing of jails: package jail makes the pipes and turns a
// Result into the report's stream.
package relay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PipeSize is the buffer a command's output pipe is given (package jail
// asks for it), and so the most one read takes.
const PipeSize = 256 << 10

// Budget is the byte budget shared by stdout and stderr.
type Budget struct {
	mu        sync.Mutex
	remaining int64 // < 0: unlimited
}

// NewBudget is a budget of limit bytes; a limit < 0 is none.
func NewBudget(limit int64) *Budget { return &Budget{remaining: limit} }

// take returns how many of n bytes may still be relayed.
func (b *Budget) take(n int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.remaining < 0 {
		return n
	}
	if int64(n) > b.remaining {
		n = int(b.remaining)
	}
	b.remaining -= int64(n)
	return n
}

// left is how many bytes may still be relayed; < 0: unlimited.
func (b *Budget) left() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remaining
}

// tailKeep is how much of the end of a truncated stream a capture keeps.
const tailKeep = 4096

// markerRoom is room for the marker line of a truncated stream's text.
const markerRoom = 128

// relay copies one output stream of the command to w within the budget,
// counting everything, and keeps a copy when capturing.
type Relay struct {
	src     *os.File
	dst     io.Writer // nil: discard
	budget  *Budget
	capture bool

	bytes     int64
	truncated bool
	// head is what was relayed, when capturing; it becomes the text
	// without a copy (see Result).
	head []byte
	tail []byte // last tailKeep bytes of what was dropped
	done chan struct{}
	text *string // made by the first Result call
	// late, for a relay made before its source exists (a terminal's
	// master, which stage 2 sends), brings the source, or nil for none.
	late       chan *os.File
	attachOnce sync.Once
	// cutting: the stream ends at the next deadline (cut); what comes
	// after is drained and dropped, not reported.
	cutting atomic.Bool
	srcSet  chan struct{} // closed once src is known (a late relay's too)
}

// New relays src to dst (nil: discard) within budget, keeping a copy when
// capture is set.
func New(src *os.File, dst io.Writer, budget *Budget, capture bool) *Relay {
	r := &Relay{src: src, dst: dst, budget: budget, capture: capture, done: make(chan struct{}), srcSet: make(chan struct{})}
	close(r.srcSet)
	go r.run()
	return r
}

// NewLate is a relay whose source attach gives later.
func NewLate(dst io.Writer, budget *Budget, capture bool) *Relay {
	r := &Relay{dst: dst, budget: budget, capture: capture, done: make(chan struct{}), late: make(chan *os.File, 1),
		srcSet: make(chan struct{})}
	go r.run()
	return r
}

// Attach gives a late relay its source, once; nil says none will come.
// It does nothing for a relay made with its source.
func (r *Relay) Attach(f *os.File) {
	if r.late == nil {
		return
	}
	used := false
	r.attachOnce.Do(func() { r.late <- f; used = true })
	if !used && f != nil {
		f.Close()
	}
}

func (r *Relay) run() {
	defer close(r.done)
	if !r.awaitSource() {
		return
	}
	kept := false
	defer func() {
		if !kept {
			r.src.Close()
		}
	}()
	pool := readBufs(r.capture)
	bp := pool.Get().(*[]byte)
	defer pool.Put(bp)
	buf := *bp
	dstOK := r.dst != nil
	for {
		n, err := r.src.Read(buf)
		if n > 0 {
			dstOK = r.deliver(buf[:n], dstOK)
		}
		if err != nil {
			kept = r.drainIfCut(err)
			return
		}
	}
}

// awaitSource waits, for a late relay, for its source, and says whether
// there is one to read.
func (r *Relay) awaitSource() bool {
	if r.late == nil {
		return true
	}
	r.src = <-r.late
	close(r.srcSet)
	return r.src != nil
}

// readBufs is the pool of the read buffers for a relay that captures or
// not. A read takes what the pipe holds, PipeSize at most. A
// capture reads 64 KiB at a time: with larger reads its growing head
// left more garbage for the collector to catch up with, and the peak
// of a 16 MiB --json run varied from 47 to 58 MiB (steady at 47
// with these), for no gain in speed.
func readBufs(capture bool) *sync.Pool {
	if capture {
		return &captureBufs
	}
	return &relayBufs
}

// deliver takes one read: it counts all of p, relays and keeps what the
// budget allows, and keeps the tail of what it drops. It returns whether
// dst still takes writes.
func (r *Relay) deliver(p []byte, dstOK bool) bool {
	r.bytes += int64(len(p))
	keep := r.budget.take(len(p))
	if keep > 0 {
		if dstOK {
			// A reader that went away must not stall the command:
			// keep draining and counting.
			if _, werr := r.dst.Write(p[:keep]); werr != nil {
				dstOK = false
			}
		}
		if r.capture {
			r.keep(p[:keep])
		}
	}
	if keep < len(p) {
		r.truncated = true
		if r.capture {
			r.keepTail(p[keep:])
		}
	}
	return dstOK
}

// keepTail adds dropped bytes to the tail, which keeps the last tailKeep.
func (r *Relay) keepTail(p []byte) {
	r.tail = append(r.tail, p...)
	if len(r.tail) > tailKeep {
		r.tail = append(r.tail[:0], r.tail[len(r.tail)-tailKeep:]...)
	}
}

// drainIfCut takes the error that ended the reads: when it is a cut's
// deadline, the source is drained and closed in the background, and it
// returns true (run must not close the source).
func (r *Relay) drainIfCut(err error) bool {
	if !r.cutting.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	// The processes a session's call kept may write on:
	// drained, so that they never see a broken pipe.
	r.src.SetReadDeadline(time.Time{})
	go func() {
		io.Copy(io.Discard, r.src)
		r.src.Close()
	}()
	return true
}

// The relays' read buffers, reused across runs: a served run's would
// otherwise be fresh memory each time, page faults included.
var (
	relayBufs   = sync.Pool{New: func() any { b := make([]byte, PipeSize); return &b }}
	captureBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}
)

// cutWait bounds how long cut waits for what the source already holds.
const cutWait = time.Second

// Cut ends the stream here, for a session's call whose command ended but
// whose kept processes hold its output open: what the source holds now is
// read first (up to cutWait), then the relay stops at a deadline, and the
// rest is drained (run). A source that cannot take a deadline ends with
// its writers, as without cut.
func (r *Relay) Cut() {
	<-r.srcSet
	if r.src == nil {
		return
	}
	r.cutting.Store(true)
	for deadline := time.Now().Add(cutWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		n, err := unix.IoctlGetInt(int(r.fd()), unix.TIOCINQ)
		if err != nil || n == 0 {
			break
		}
	}
	r.src.SetReadDeadline(time.Now())
}

// fd is the source's descriptor without making it blocking (os.File.Fd
// would).
func (r *Relay) fd() uintptr {
	var fd uintptr
	if sc, err := r.src.SyscallConn(); err == nil {
		sc.Control(func(f uintptr) { fd = f })
	}
	return fd
}

// keep appends p, within the budget, to the captured head. The head grows
// by doubling, but never beyond what the budget can still give plus room
// for the marker line and the tail: a stream that reaches the output limit
// is held in one buffer of about the limit, not one of up to twice it, and
// stream makes the text in place.
func (r *Relay) keep(p []byte) {
	need := len(r.head) + len(p)
	if need > cap(r.head) {
		n := max(2*cap(r.head), 64<<10)
		if left := r.budget.left(); left >= 0 && n >= need+int(left) {
			n = need + int(left) + markerRoom + tailKeep
		}
		head := make([]byte, len(r.head), max(n, need))
		copy(head, r.head)
		r.head = head
	}
	r.head = append(r.head, p...)
}

// Result is what a relay saw of its stream.
type Result struct {
	Bytes     int64   // every byte the command wrote
	Truncated bool    // some went over the budget and were dropped
	Text      *string // the capture; nil when not capturing
}

// Result waits for the end of the stream and returns what it saw. The
// captured text is the head, and for a truncated stream a marker line
// and the tail, in the head's own buffer: it is not copied.
func (r *Relay) Result() Result {
	<-r.done
	res := Result{Bytes: r.bytes, Truncated: r.truncated}
	if !r.capture {
		return res
	}
	if r.text == nil {
		b := r.head
		if r.truncated {
			dropped := r.bytes - int64(len(r.head))
			b = fmt.Appendf(b, "\n[tooljail: %d bytes over the output limit dropped; the last %d follow]\n", dropped, len(r.tail))
			b = append(b, r.tail...)
		}
		// Nothing writes to b again (the relay is done and lets go of
		// it), so the string may share its bytes, as strings.Builder's
		// String does.
		text := unsafe.String(unsafe.SliceData(b), len(b))
		r.text, r.head, r.tail = &text, nil, nil
	}
	res.Text = r.text
	return res
}

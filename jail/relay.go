package jail

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
)

// outputBudget is the byte budget shared by stdout and stderr.
type outputBudget struct {
	mu        sync.Mutex
	remaining int64 // < 0: unlimited
}

// take returns how many of n bytes may still be relayed.
func (b *outputBudget) take(n int) int {
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

// tailKeep is how much of the end of a truncated stream a capture keeps.
const tailKeep = 4096

// relay copies one output stream of the command to w within the budget,
// counting everything, and keeps a copy when capturing.
type relay struct {
	src     *os.File
	dst     io.Writer // nil: discard
	budget  *outputBudget
	capture bool

	bytes     int64
	truncated bool
	head      bytes.Buffer
	tail      []byte // last tailKeep bytes of what was dropped
	done      chan struct{}
}

func newRelay(src *os.File, dst io.Writer, budget *outputBudget, capture bool) *relay {
	r := &relay{src: src, dst: dst, budget: budget, capture: capture, done: make(chan struct{})}
	go r.run()
	return r
}

func (r *relay) run() {
	defer close(r.done)
	defer r.src.Close()
	buf := make([]byte, 64<<10)
	dstOK := r.dst != nil
	for {
		n, err := r.src.Read(buf)
		if n > 0 {
			r.bytes += int64(n)
			keep := r.budget.take(n)
			if keep > 0 {
				if dstOK {
					// A reader that went away must not stall the command:
					// keep draining and counting.
					if _, werr := r.dst.Write(buf[:keep]); werr != nil {
						dstOK = false
					}
				}
				if r.capture {
					r.head.Write(buf[:keep])
				}
			}
			if keep < n {
				r.truncated = true
				if r.capture {
					r.tail = append(r.tail, buf[keep:n]...)
					if len(r.tail) > tailKeep {
						r.tail = append(r.tail[:0], r.tail[len(r.tail)-tailKeep:]...)
					}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// stream waits for the end of the stream and returns its report entry.
func (r *relay) stream() Stream {
	<-r.done
	s := Stream{Bytes: r.bytes, Truncated: r.truncated}
	if r.capture {
		text := r.head.String()
		if r.truncated {
			dropped := r.bytes - int64(r.head.Len())
			text += fmt.Sprintf("\n[tooljail: %d bytes over the output limit dropped; the last %d follow]\n", dropped, len(r.tail)) + string(r.tail)
		}
		s.Text = &text
	}
	return s
}

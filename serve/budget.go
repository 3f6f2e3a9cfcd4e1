package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sync/semaphore"
)

// RequestBudget is the most the server holds, across all connections, of
// requests: the request lines being read, and, for each call until it
// ends, its stdin and its argv and env (decoded.held). Twice MaxRequest,
// so that the largest request fits while its line is joined and while its
// stdin is decoded from it. A request that finds the budget spent waits
// for its first bytes until its RequestTimeout; one that has started and
// finds no more is refused at once (it would otherwise hold its part while
// others wait for it), so no two requests wait on each other.
const RequestBudget = 2 * MaxRequest

// chunkSize is the unit a request line is read and counted in.
const chunkSize = 64 << 10

// chunks are readLine's first chunk of each request line, reused: a
// fresh one per call was much of what a session call allocated
// (BENCHMARKS.md, issue 31). A request line that fits one chunk is read
// into it and decoded from it; putChunk gives it back after.
var chunks = sync.Pool{New: func() any { b := make([]byte, 0, chunkSize); return &b }}

// putChunk gives back a line readLine read into a pooled chunk; a line
// joined from several chunks is left to the collector.
func putChunk(line []byte) {
	if cap(line) == chunkSize {
		b := line[:0]
		chunks.Put(&b)
	}
}

// drain reads the client's side of a connection until its end, into a
// small buffer: the client sends nothing more after its request (an
// interactive call's input is read elsewhere), and io.Copy through the
// buffered reader would take a fresh large buffer per call.
func drain(r io.Reader) {
	var b [512]byte
	for {
		if _, err := r.Read(b[:]); err != nil {
			return
		}
	}
}

// errBudget is a request that does not fit in what is left of the budget.
var errBudget = errors.New("request budget spent")

// errTooLong is a request line longer than MaxRequest.
var errTooLong = errors.New("request line too long")

func budgetRefusal() *Error {
	return refuse("the server already holds %d MiB of requests being read or waiting to run (its limit); retry in a moment, or send large input as a file in the workdir", RequestBudget>>20)
}

// readLine reads one request line of at most MaxRequest bytes (the
// newline included; a longer one is errTooLong) from
// r, counting what it holds against b: held is what the caller must
// release. ctx bounds the wait for the first chunk of the budget. What
// the read brought after the line (an interactive call's first input
// lines) goes to *after.
func readLine(ctx context.Context, r io.Reader, b *semaphore.Weighted, after *[]byte) (line []byte, held int64, err error) {
	if err := b.Acquire(ctx, chunkSize); err != nil {
		return nil, 0, errBudget
	}
	held = chunkSize
	var full [][]byte
	cur := (*chunks.Get().(*[]byte))[:0]
	total := 0
	for total < MaxRequest+1 {
		if len(cur) == cap(cur) {
			if !b.TryAcquire(chunkSize) {
				b.Release(held)
				return nil, 0, errBudget
			}
			held += chunkSize
			full = append(full, cur)
			cur = make([]byte, 0, chunkSize)
		}
		n, rerr := r.Read(cur[len(cur):min(cap(cur), len(cur)+MaxRequest+1-total)])
		if i := bytes.IndexByte(cur[len(cur):len(cur)+n], '\n'); i >= 0 {
			if after != nil {
				*after = append((*after)[:0], cur[len(cur)+i+1:len(cur)+n]...)
			}
			cur = cur[:len(cur)+i+1]
			total += i + 1
			break
		}
		cur = cur[:len(cur)+n]
		total += n
		if rerr != nil {
			err = rerr
			break
		}
	}
	if total > MaxRequest {
		b.Release(held)
		putChunk(cur)
		return nil, 0, errTooLong
	}
	if len(full) == 0 {
		return cur, held, err
	}
	// One slice for the decoder: the copy is counted too, then the chunks
	// go.
	if !b.TryAcquire(int64(total)) {
		b.Release(held)
		putChunk(full[0])
		return nil, 0, errBudget
	}
	line = make([]byte, 0, total)
	for _, c := range full {
		line = append(line, c...)
	}
	line = append(line, cur...)
	putChunk(full[0])
	b.Release(held)
	return line, int64(total), err
}

// resize changes what a call holds from held to want: more is taken only
// if it is free now.
func resize(b *semaphore.Weighted, held, want int64) (int64, bool) {
	switch {
	case want < held:
		b.Release(held - want)
	case want > held:
		if !b.TryAcquire(want - held) {
			return held, false
		}
	}
	return want, true
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

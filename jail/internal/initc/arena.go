package initc

/*
#include "init.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// arena is memory for a plan outside the Go heap and malloc's arenas:
// mappings of its own, which the fork keeps when it leaves the rest of the
// supervisor's memory out of the init (tj_init_start). The init reads its
// copy after the fork, and the supervisor unmaps the original once the
// init is started.
type arena struct {
	chunks [][]byte
	used   int // bytes taken in the last chunk
}

// arenaChunk is the first chunk's size: the default profile's plan takes
// under 10 KiB. Later chunks double, so a plan needs few.
const arenaChunk = 64 << 10

func (a *arena) alloc(size uintptr) (unsafe.Pointer, error) {
	n := (int(max(size, 1)) + 15) &^ 15
	if len(a.chunks) == 0 || a.used+n > len(a.chunks[len(a.chunks)-1]) {
		sz := arenaChunk << min(len(a.chunks), 8)
		for sz < n {
			sz *= 2
		}
		m, err := unix.Mmap(-1, 0, sz, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, fmt.Errorf("memory for the jail's plan (%d bytes): %w", sz, err)
		}
		a.chunks, a.used = append(a.chunks, m), 0
	}
	p := unsafe.Pointer(&a.chunks[len(a.chunks)-1][a.used])
	a.used += n
	return p, nil
}

// allocN is room for n values of T in a, as a slice.
func allocN[T any](a *arena, n int) ([]T, error) {
	var v T
	p, err := a.alloc(uintptr(n) * unsafe.Sizeof(v))
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(p), n), nil
}

// keep tells the fork which mappings hold the plan.
func (a *arena) keep(c *C.struct_tj_init) {
	if len(a.chunks) > C.TJ_KEEP_MAX {
		c.nkeep = 0 // the fork keeps everything
		return
	}
	for i, m := range a.chunks {
		lo := uintptr(unsafe.Pointer(&m[0]))
		c.keep_lo[i], c.keep_hi[i] = C.uint64_t(lo), C.uint64_t(lo+uintptr(len(m)))
	}
	c.nkeep = C.int(len(a.chunks))
}

func (a *arena) cstring(v string) (*C.char, error) {
	p, err := allocN[byte](a, len(v)+1)
	if err != nil {
		return nil, err
	}
	copy(p, v)
	return (*C.char)(unsafe.Pointer(&p[0])), nil
}

// cstrings is a NULL-terminated array of l's strings.
func (a *arena) cstrings(l []string) (**C.char, error) {
	arr, err := allocN[*C.char](a, len(l)+1)
	if err != nil {
		return nil, err
	}
	for i, v := range l {
		if arr[i], err = a.cstring(v); err != nil {
			return nil, err
		}
	}
	return &arr[0], nil
}

func (a *arena) free() {
	for _, m := range a.chunks {
		unix.Munmap(m)
	}
	a.chunks, a.used = nil, 0
}

// region is memory the supervisor shares with the init (MAP_SHARED): the
// late part of the plan, which it fills in after the fork and before the
// sync byte. Its size is fixed before the fork, so nothing may be
// allocated in it that was not reserved then.
type region struct {
	mem  []byte
	used int
}

func newRegion(size int) (*region, error) {
	size = (size + 4095) &^ 4095
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("memory shared with the jail's init: %w", err)
	}
	return &region{mem: m}, nil
}

var errRegionFull = errors.New("the run's plan does not fit the memory reserved for it")

func (r *region) alloc(size uintptr) (unsafe.Pointer, error) {
	n := (int(max(size, 1)) + 15) &^ 15
	if r.used+n > len(r.mem) {
		return nil, errRegionFull
	}
	p := unsafe.Pointer(&r.mem[r.used])
	r.used += n
	return p, nil
}

func (r *region) cstring(v string) (*C.char, error) {
	p, err := r.alloc(uintptr(len(v)) + 1)
	if err != nil {
		return nil, err
	}
	copy(unsafe.Slice((*byte)(p), len(v)), v)
	return (*C.char)(p), nil
}

func (r *region) free() {
	if r != nil && r.mem != nil {
		unix.Munmap(r.mem)
		r.mem = nil
	}
}

func cbool(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

package jail_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// Every MADV_DONTFORK mark the init's fork sets (tj_init_start, static
// binary only) is undone once the clone returns, even when another thread
// unmaps part of a marked span in between: madvise then marks the part
// still mapped and returns ENOMEM, and a mark left behind leaves that memory
// out of every later init (a new thread's stack, another run's plan), which
// faults. In rounds, runs start from several goroutines while another keeps
// making a small anonymous mapping, unmapping half of it and making the
// rest read-only (so that no later fork marks it again, nor undoes a mark
// left on it). After each round, with no fork under way, no mapping of the
// process may carry the mark ("dc" in /proc/self/smaps: nothing else here
// marks memory MADV_DONTFORK), and every run must have worked.
//
// Threads that come and go would be closer to what hit the CLI (their
// stacks are unmapped), but they take the CPU from the hole punching and
// the race is then seldom hit on a small machine.
func TestForkLeavesNoMarks(t *testing.T) {
	if !static() {
		t.Skip("only a static binary marks memory around the init's fork (make unit runs this package static too)")
	}
	if _, err := os.Stat("/bin/true"); err != nil {
		t.Skip("no /bin/true here")
	}
	checkMarksVisible(t)
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	// The fork is the same without cgroup caps: without root on cgroup v1
	// the runs go without them.
	if err := p.AddAllowDegraded(jail.LayerCgroup); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	// Bounded by count and by time: on the faulty code a mark is left
	// within the first rounds; a slow machine only runs fewer.
	deadline := time.Now().Add(3 * time.Second)
	const goroutines, each = 4, 2
	forks, punched := 0, 0
	for round := 0; round < 24 && time.Now().Before(deadline) && !t.Failed(); round++ {
		a, err := newArena(1 << 14)
		if err != nil {
			t.Fatal(err)
		}
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			a.punch(stop)
			close(done)
		}()
		errs := runRound(p, dir, goroutines, each)
		close(stop)
		<-done
		forks += goroutines * each
		punched += a.used
		marked := dontForkMappings(selfSmaps(t))
		a.unmap()
		if a.err != nil {
			t.Logf("round %d: the hole punching stopped early: %v", round, a.err)
		}
		if len(marked) > 0 {
			t.Errorf("round %d: %d mappings are still marked MADV_DONTFORK after every init's fork returned (tj_init_start must undo every mark it sets, also on a span partly unmapped meanwhile):\n%s",
				round, len(marked), strings.Join(marked, "\n"))
		}
		for _, err := range errs {
			t.Error(err)
		}
	}
	t.Logf("%d runs, %d slots punched beside them", forks, punched)
}

// runRound runs /bin/true n times from each of g goroutines at once.
func runRound(p *profiles.Profile, dir string, g, n int) []error {
	errs := make(chan error, g*n)
	var wg sync.WaitGroup
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < n; j++ {
				spec, err := p.Spec(profiles.Request{Args: []string{"/bin/true"}, Cwd: dir})
				if err != nil {
					errs <- err
					return
				}
				res, err := jail.Command(spec).Run()
				if err != nil || res.ExitCode != 0 {
					errs <- fmt.Errorf("run %d.%d: %+v, %v", i, j, res, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// checkMarksVisible makes sure the check can see a mark at all: this
// kernel shows MADV_DONTFORK as "dc" in smaps.
func checkMarksVisible(t *testing.T) {
	t.Helper()
	b, err := unix.Mmap(-1, 0, os.Getpagesize(), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	if err := unix.Madvise(b, unix.MADV_DONTFORK); err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("%x-", uintptr(unsafe.Pointer(&b[0])))
	marked := dontForkMappings(selfSmaps(t))
	if !slices.ContainsFunc(marked, func(m string) bool { return strings.HasPrefix(m, head) }) {
		t.Fatalf("a page marked MADV_DONTFORK at %s is not marked \"dc\" in /proc/self/smaps: the check would see no leftover mark", head)
	}
}

func selfSmaps(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// arena is address space reserved PROT_NONE, used two pages (a slot) at a
// time: the slot is made read-write, its second page unmapped and its
// first made read-only. A fork that read the slot whole and marks it once
// the page is out gets ENOMEM and marks the first page; read-only, that
// page is left alone by later forks, so a mark not undone stays. The hole
// is filled again (read-only, so that the used slots merge into one
// mapping) arenaHoles slots later: a fork's read and its marks may be
// further apart than one slot's turn.
type arena struct {
	base    unsafe.Pointer
	slots   int
	pg      int
	used    int
	holes   []int // pages out, oldest first
	foreign []int // pages out that something else has mapped since
	err     error // why the punching stopped early
}

// How long a slot stays whole and read-write, so that a fork may read it
// so (busy: a sleep would give the CPU away), and how many holes stay open,
// so that the fork's marks come while the hole it did not see is still out.
const (
	arenaWhole = 50 * time.Microsecond
	arenaHoles = 64
)

func newArena(slots int) (*arena, error) {
	a := &arena{slots: slots, pg: os.Getpagesize()}
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(2*slots*a.pg), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserve %d pages: %w", 2*slots, err)
	}
	a.base = base
	return a, nil
}

// page is the address of page i of the arena.
func (a *arena) page(i int) unsafe.Pointer { return unsafe.Add(a.base, i*a.pg) }

func (a *arena) protect(i, n, prot int) error {
	return unix.Mprotect(unsafe.Slice((*byte)(a.page(i)), n*a.pg), prot)
}

// punch uses one slot after the other until stop (or the arena is used
// up), then fills every hole again.
func (a *arena) punch(stop <-chan struct{}) {
	defer func() {
		for _, i := range a.holes {
			if err := a.fill(i); err != nil {
				a.foreign = append(a.foreign, i)
				a.err = errors.Join(a.err, err)
			}
		}
		a.holes = nil
	}()
	for ; a.used < a.slots; a.used++ {
		select {
		case <-stop:
			return
		default:
		}
		lo := 2 * a.used
		if err := a.protect(lo, 2, unix.PROT_READ|unix.PROT_WRITE); err != nil {
			a.err = fmt.Errorf("make slot %d read-write: %w", a.used, err)
			return
		}
		for start := time.Now(); time.Since(start) < arenaWhole; {
		}
		if err := unix.MunmapPtr(a.page(lo+1), uintptr(a.pg)); err != nil {
			a.err = fmt.Errorf("unmap page %d: %w", lo+1, err)
			return
		}
		a.holes = append(a.holes, lo+1)
		if err := a.protect(lo, 1, unix.PROT_READ); err != nil {
			a.err = fmt.Errorf("make page %d read-only: %w", lo, err)
			return
		}
		if len(a.holes) > arenaHoles {
			i := a.holes[0]
			a.holes = a.holes[1:]
			if err := a.fill(i); err != nil {
				a.foreign = append(a.foreign, i)
				a.err = err
				return
			}
		}
	}
	<-stop
}

// fill maps page i again, where nothing else has been mapped meanwhile.
func (a *arena) fill(i int) error {
	got, err := unix.MmapPtr(-1, 0, a.page(i), uintptr(a.pg), unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED_NOREPLACE)
	if err == nil && got != a.page(i) { // a kernel without MAP_FIXED_NOREPLACE took it as a hint
		unix.MunmapPtr(got, uintptr(a.pg))
		err = fmt.Errorf("mapped at %p", got)
	}
	if err != nil {
		return fmt.Errorf("fill page %d again: %w", i, err)
	}
	return nil
}

// unmap gives the arena back, except the pages something else has mapped.
func (a *arena) unmap() {
	end := 2 * a.slots
	skip := append(slices.Clone(a.foreign), end)
	slices.Sort(skip)
	lo := 0
	for _, i := range skip {
		if i > lo {
			unix.MunmapPtr(a.page(lo), uintptr((i-lo)*a.pg))
		}
		lo = i + 1
	}
}

// dontForkMappings lists the mappings in an smaps text that are marked
// MADV_DONTFORK ("dc" in their VmFlags), by their header lines.
func dontForkMappings(smaps string) []string {
	var marked []string
	head := ""
	for _, line := range strings.Split(smaps, "\n") {
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok {
			if slices.Contains(strings.Fields(flags), "dc") {
				marked = append(marked, head)
			}
			continue
		}
		if first, _, _ := strings.Cut(line, " "); strings.Contains(first, "-") && !strings.HasSuffix(first, ":") {
			head = line
		}
	}
	return marked
}

func TestDontForkMappings(t *testing.T) {
	const smaps = `7f0000000000-7f0000010000 rw-p 00000000 00:00 0 
Size:                 64 kB
VmFlags: rd wr mr mw me ac sd 
7f0000010000-7f0000020000 rw-p 00000000 00:00 0                          [anon:x]
Size:                 64 kB
VmFlags: rd wr mr mw me dc ac sd 
7ffd00000000-7ffd00002000 r--p 00000000 00:00 0                          [vvar]
Size:                  8 kB
VmFlags: rd mr pf io de dd sd 
`
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"none", "", nil},
		{"dc marks, dd does not", smaps, []string{"7f0000010000-7f0000020000 rw-p 00000000 00:00 0                          [anon:x]"}},
		{"no flags line", "7f0000000000-7f0000010000 rw-p 00000000 00:00 0 \nSize: 64 kB\n", nil},
	} {
		if got := dontForkMappings(c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxEINTR bounds writeFile's tries after EINTR.
const maxEINTR = 100

// writeFile writes one value into an existing cgroup control file. Control
// files are never created: a missing file means the controller is absent.
// Raw system calls, not os.File: cgroupfs and procfs files cannot be
// polled, and os.File's poller registration and finalizer cost more than
// the write on a path every run takes several times.
func writeFile(dir, name, value string) error {
	p := filepath.Join(dir, name)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	// A v1 memory limit below the usage makes the kernel reclaim, and it
	// gives up with EINTR when a signal is pending: the Go runtime's own
	// preemption signals and other runs' SIGCHLD are. The write changes
	// nothing until it succeeds, so it is tried again.
	for try := 0; ; try++ {
		_, err = unix.Write(fd, []byte(value))
		if err != unix.EINTR || try == maxEINTR {
			break
		}
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %q to %s: %w", value, p, err)
	}
	return nil
}

// readFile reads a cgroupfs or procfs file whole, with raw system calls
// (see writeFile). Its errors are *os.PathError, like os.ReadFile's.
func readFile(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	return readAt0(fd, p)
}

// readAt0 reads the open file fd (at path p, for errors) whole from
// offset 0, whatever was read of it before: a cgroupfs or procfs file's
// text is made anew by a read from its start (figureFiles relies on it).
// It reads until a read returns nothing: a seq_file of many records (a
// cgroup.procs) returns short reads at record boundaries before its end.
func readAt0(fd int, p string) ([]byte, error) { return readFrom0(fd, p, false) }

// readFigureAt0 is readAt0 for a cgroup figure file, which the kernel
// makes in one piece (one seq_show, no seq_start: kernfs then works as
// single_open does), so a read shorter than asked is the end: one read, not
// two, for each figure a call reads.
func readFigureAt0(fd int, p string) ([]byte, error) { return readFrom0(fd, p, true) }

func readFrom0(fd int, p string, onePiece bool) ([]byte, error) {
	// Most figure files are a line or a few: a small first buffer, as a
	// session reads ten of them at each call.
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		asked := cap(b) - len(b)
		n, err := unix.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		b = b[:len(b)+n]
		if n == 0 || onePiece && n < asked {
			return b, nil
		}
	}
}

// reader reads a whole file by its path: readFile, or a group's
// figureFiles.
type reader func(path string) ([]byte, error)

func readString(dir, name string) (string, error) { return readStringBy(readFile, dir, name) }

func readStringBy(rd reader, dir, name string) (string, error) {
	b, err := rd(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readIntBy reads a file holding one integer ("max" reads as -1).
func readIntBy(rd reader, dir, name string) (int64, error) {
	s, err := readStringBy(rd, dir, name)
	if err != nil {
		return 0, err
	}
	if s == "max" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s/%s: %w", dir, name, err)
	}
	return v, nil
}

// parseKeyed parses "key value" lines (cpu.stat, memory.events,
// memory.oom_control, pids.events, cpuacct.stat).
func parseKeyed(b []byte) map[string]int64 {
	m := map[string]int64{}
	eachKeyed(b, func(k []byte, v int64) bool {
		m[string(k)] = v
		return true
	})
	return m
}

// eachKeyed calls f with each "key value" line of b whose value is an
// integer, until f returns false. It allocates nothing: a call's figures
// are read at each call of a session.
func eachKeyed(b []byte, f func(k []byte, v int64) bool) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte{' '})
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			continue
		}
		if !f(k, n) {
			return
		}
	}
}

func readKeyed(dir, name string) (map[string]int64, error) { return readKeyedBy(readFile, dir, name) }

func readKeyedBy(rd reader, dir, name string) (map[string]int64, error) {
	b, err := rd(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	return parseKeyed(b), nil
}

// keyedBy returns a pointer to key of file name, or nil when the file or
// the key is absent: a figure the host cannot give is never a made-up zero.
func keyedBy(rd reader, dir, name, key string) *int64 {
	b, err := rd(filepath.Join(dir, name))
	if err != nil {
		return nil
	}
	var out *int64
	eachKeyed(b, func(k []byte, v int64) bool {
		if string(k) == key {
			out = &v
		}
		return out == nil
	})
	return out
}

// intFileBy is readIntBy's value, or nil when it cannot be read.
func intFileBy(rd reader, dir, name string) *int64 {
	v, err := readIntBy(rd, dir, name)
	if err != nil {
		return nil
	}
	return &v
}

// readPids lists the pids in dir/cgroup.procs.
func readPids(dir string) ([]int, error) {
	b, err := readFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err == nil {
			pids = append(pids, p)
		}
	}
	return pids, nil
}

// writable says whether this process may write path.
func writable(path string) bool {
	return unix.Access(path, unix.W_OK) == nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// isNotExist also covers ENODEV, which cgroupfs returns for files of a
// controller that is not enabled.
func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENODEV)
}

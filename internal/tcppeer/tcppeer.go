// Package tcppeer names the process at the other end of a loopback TCP
// connection from the kernel's socket tables, since TCP carries no
// credentials (SO_PEERCRED names no one on a TCP socket) and nothing the
// client sends can be trusted to say who it is.
//
// The client's socket is the entry of /proc/net/tcp or /proc/net/tcp6
// whose local address is the connection's remote one and whose remote
// address is its local one, in state ESTABLISHED: a 4-tuple names one
// socket, and the kernel filled in the entry's uid (the socket's owner)
// and inode. The pid is a process holding that inode among its open
// files, which the server can see for its own uid's processes (all of
// them as root); the gid is that process's.
package tcppeer

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner is the client of a connection: the uid that owns its socket, and
// the pid and gid of a process that holds it, -1 when none could be seen.
type Owner struct {
	UID, GID, PID int
}

// ErrNotFound: no established socket is the other end of the connection
// (the client closed it, or it is not a loopback connection of this
// network namespace).
var ErrNotFound = errors.New("no established socket on this host is the connection's other end")

// Of names the client of conn, a connection this process accepted on a
// loopback address (local and remote are conn's LocalAddr and
// RemoteAddr).
func Of(conn net.Conn) (Owner, error) {
	local, ok1 := addrPort(conn.LocalAddr())
	remote, ok2 := addrPort(conn.RemoteAddr())
	if !ok1 || !ok2 {
		return Owner{-1, -1, -1}, fmt.Errorf("connection %v -> %v: not TCP", conn.RemoteAddr(), conn.LocalAddr())
	}
	return lookup("/proc", local, remote)
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	return t.AddrPort(), true
}

// lookup finds, under the proc file system at proc, the socket whose
// local address is remote and whose remote address is local, then its
// owner.
func lookup(proc string, local, remote netip.AddrPort) (Owner, error) {
	o := Owner{UID: -1, GID: -1, PID: -1}
	// An IPv4 client may hold an IPv6 socket (a v4-mapped address), and
	// the reverse cannot be: an IPv6 client is in tcp6 only.
	tables := []string{"tcp", "tcp6"}
	if !remote.Addr().Unmap().Is4() {
		tables = tables[1:]
	}
	for _, name := range tables {
		path := filepath.Join(proc, "net", name)
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			return o, fmt.Errorf("read the socket table: %w", err)
		}
		uid, inode, err := FindSocket(f, binary.NativeEndian, remote, local)
		f.Close()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", path, err)
		}
		o.UID = uid
		if inode == 0 {
			return o, nil // no file holds the socket (it is being torn down)
		}
		if pid, ok := holder(proc, inode); ok {
			o.PID = pid
			o.GID = gidOf(proc, pid)
		}
		return o, nil
	}
	return o, fmt.Errorf("connection from %v to %v: %w", remote, local, ErrNotFound)
}

// stateEstablished is TCP_ESTABLISHED in the st column.
const stateEstablished = 0x01

// FindSocket reads a socket table in the format of /proc/net/tcp or
// /proc/net/tcp6, whose addresses are 32-bit words in the kernel's byte
// order (order; ports are big-endian numbers), and returns the uid and
// inode of the ESTABLISHED socket with local address local and remote
// address remote. Addresses compare unmapped: 127.0.0.1 matches
// ::ffff:127.0.0.1. It returns ErrNotFound when no line matches.
func FindSocket(table io.Reader, order binary.ByteOrder, local, remote netip.AddrPort) (uid int, inode uint64, err error) {
	local = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	remote = netip.AddrPortFrom(remote.Addr().Unmap(), remote.Port())
	sc := bufio.NewScanner(table)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			return 0, 0, fmt.Errorf("line %q: want at least 10 fields", sc.Text())
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return 0, 0, fmt.Errorf("line %q: state %q: %v", sc.Text(), f[3], err)
		}
		if st != stateEstablished {
			continue
		}
		l, err := ParseAddrPort(f[1], order)
		if err != nil {
			return 0, 0, fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		r, err := ParseAddrPort(f[2], order)
		if err != nil {
			return 0, 0, fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		if l != local || r != remote {
			continue
		}
		u, err := strconv.ParseUint(f[7], 10, 32)
		if err != nil {
			return 0, 0, fmt.Errorf("line %q: uid %q: %v", sc.Text(), f[7], err)
		}
		ino, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("line %q: inode %q: %v", sc.Text(), f[9], err)
		}
		return int(u), ino, nil
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	return 0, 0, ErrNotFound
}

// ParseAddrPort reads an ADDR:PORT column of /proc/net/tcp{,6}: ADDR is 8
// or 32 hex digits, one or four 32-bit words each in order's byte order;
// PORT is 4 hex digits, a big-endian number. The address comes back
// unmapped (a v4-mapped IPv6 address as IPv4).
func ParseAddrPort(s string, order binary.ByteOrder) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 {
		return netip.AddrPort{}, fmt.Errorf("address %q: want HEXADDR:HEXPORT", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address %q: port: %v", s, err)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("address %q: want 8 or 32 hex digits", s)
	}
	// The kernel printed each word as the number its 4 bytes make in its
	// own byte order; storing that number back in that order gives the
	// address's bytes.
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		order.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// holder is the first process found with the socket inode among its open
// files. Only the processes whose fd directory this process may read are
// seen; the others are skipped.
func holder(proc string, inode uint64) (int, bool) {
	d, err := os.Open(proc)
	if err != nil {
		return 0, false
	}
	defer d.Close()
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	self := os.Getpid()
	// This process first: a client in the server's own process is the
	// tests', and costs one directory.
	if proc == "/proc" && holds(proc, self, want) {
		return self, true
	}
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			pid, err := strconv.Atoi(n)
			if err != nil || pid <= 0 || (proc == "/proc" && pid == self) {
				continue
			}
			if holds(proc, pid, want) {
				return pid, true
			}
		}
		if err != nil {
			return 0, false
		}
	}
}

// holds tells whether process pid has a file descriptor whose link reads
// want.
func holds(proc string, pid int, want string) bool {
	fdDir := filepath.Join(proc, strconv.Itoa(pid), "fd")
	d, err := os.Open(fdDir)
	if err != nil {
		return false
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if l, err := os.Readlink(filepath.Join(fdDir, n)); err == nil && l == want {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// gidOf is the effective gid of process pid (the second field of the
// Gid line of its status, as SO_PEERCRED would give), or -1.
func gidOf(proc string, pid int) int {
	data, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Gid:"); ok {
			f := strings.Fields(rest)
			if len(f) < 2 {
				return -1
			}
			g, err := strconv.Atoi(f[1])
			if err != nil {
				return -1
			}
			return g
		}
	}
	return -1
}

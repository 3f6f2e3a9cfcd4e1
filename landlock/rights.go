package landlock

import (
	"fmt"

	gl "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Right names, in bit order, as the kernel's audit records and the run
// report spell them.
var (
	fsRightNames = []string{
		"execute", "write_file", "read_file", "read_dir", "remove_dir",
		"remove_file", "make_char", "make_dir", "make_reg", "make_sock",
		"make_fifo", "make_block", "make_sym", "refer", "truncate",
		"ioctl_dev", "resolve_unix",
	}
	netRightNames = []string{"bind_tcp", "connect_tcp", "bind_udp", "connect_send_udp"}
	scopeNames    = []string{"abstract_unix_socket", "signal"}
)

func names(set uint64, table []string) []string {
	var out []string
	for i, n := range table {
		if set&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// presets are go-landlock's per-ABI configs; index = ABI.
var presets = []gl.Config{{}, gl.V1, gl.V2, gl.V3, gl.V4, gl.V5, gl.V6, gl.V7, gl.V8, gl.V9, gl.V10, gl.V11}

const (
	tcpRights = gl.AccessNetSet(ll.AccessNetBindTCP | ll.AccessNetConnectTCP)

	// fileRights are the rights the kernel accepts on a rule for a
	// non-directory (any other right there is EINVAL).
	fileRights = gl.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile |
		ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev)

	rightsRead = gl.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir)

	rightsDevice = gl.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSWriteFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev)

	rightsReadWrite = gl.AccessFSSet(ll.AccessFSExecute | ll.AccessFSWriteFile |
		ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSRemoveDir |
		ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
		ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSRefer |
		ll.AccessFSTruncate | ll.AccessFSResolveUnix)
)

// rights returns what a rule grants on a path of the given kind, before
// intersecting with what the ABI handles.
func (a Access) rights(isDir, isDevice bool) (gl.AccessFSSet, error) {
	var r gl.AccessFSSet
	switch a {
	case ReadExec:
		r = rightsRead | ll.AccessFSExecute
	case Read:
		r = rightsRead
	case ReadWrite:
		r = rightsReadWrite
		if isDevice {
			r = rightsDevice
		}
	case Device:
		r = rightsDevice
	case List:
		if !isDir {
			return 0, fmt.Errorf("access %q applies to directories only", a)
		}
		r = ll.AccessFSReadDir
	default:
		return 0, fmt.Errorf("unknown access %q (want rx, r, rw, dev or list)", a)
	}
	if !isDir {
		r &= fileRights
	}
	return r, nil
}

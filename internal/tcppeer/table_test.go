package tcppeer

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

const header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// line is a /proc/net/tcp{,6} line with the given columns.
func line(local, remote, st, uid, inode string) string {
	return "   0: " + local + " " + remote + " " + st + " 00000000:00000000 00:00000000 00000000 " + uid + " 0 " + inode + " 1 0000000000000000 20 4 30 10 -1\n"
}

func TestParseAddrPort(t *testing.T) {
	for _, c := range []struct {
		in    string
		order binary.ByteOrder
		want  string
	}{
		{"0100007F:1F90", binary.LittleEndian, "127.0.0.1:8080"},
		{"7F000001:1F90", binary.BigEndian, "127.0.0.1:8080"},
		{"0302010A:0016", binary.LittleEndian, "10.1.2.3:22"},
		{"00000000:0000", binary.LittleEndian, "0.0.0.0:0"},
		{"00000000000000000000000001000000:B26E", binary.LittleEndian, "[::1]:45678"},
		{"00000000000000000000000000000001:B26E", binary.BigEndian, "[::1]:45678"},
		// ::ffff:127.0.0.1 comes back unmapped.
		{"0000000000000000FFFF00000100007F:0050", binary.LittleEndian, "127.0.0.1:80"},
		// fe80::1234:5678:9abc:def0: each word's bytes reversed.
		{"000080FE0000000078563412F0DEBC9A:0001", binary.LittleEndian, "[fe80::1234:5678:9abc:def0]:1"},
	} {
		got, err := ParseAddrPort(c.in, c.order)
		if err != nil || got.String() != c.want {
			t.Errorf("ParseAddrPort(%q) = %v, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:1F9", "0100007F:XYZW", "0100007:1F90", "0100007F00:1F90", "ZZ00007F:1F90"} {
		if got, err := ParseAddrPort(bad, binary.LittleEndian); err == nil {
			t.Errorf("ParseAddrPort(%q) = %v, want an error", bad, got)
		}
	}
}

func TestFindSocket(t *testing.T) {
	ap := netip.MustParseAddrPort
	// The server listens on 127.0.0.1:8080 (1F90); the client is
	// 127.0.0.1:45678 (B26E). Both ends of a loopback connection are in
	// the table: the server's (local 8080) belongs to uid 0, the client's
	// (local 45678) to uid 1000.
	server := ap("127.0.0.1:8080")
	client := ap("127.0.0.1:45678")
	listen := line("0100007F:1F90", "00000000:0000", "0A", "0", "100")
	serverEnd := line("0100007F:1F90", "0100007F:B26E", "01", "0", "101")
	clientEnd := line("0100007F:B26E", "0100007F:1F90", "01", "1000", "102")
	v6server := ap("[::1]:8080")
	v6client := ap("[::1]:45678")
	v6serverEnd := line("00000000000000000000000001000000:1F90", "00000000000000000000000001000000:B26E", "01", "0", "201")
	v6clientEnd := line("00000000000000000000000001000000:B26E", "00000000000000000000000001000000:1F90", "01", "1001", "202")
	// An IPv6 socket of the client connected to an IPv4 server.
	mappedClientEnd := line("0000000000000000FFFF00000100007F:B26E", "0000000000000000FFFF00000100007F:1F90", "01", "1002", "302")
	for _, c := range []struct {
		name           string
		table          string
		local, remote  netip.AddrPort
		uid            int
		inode          uint64
		notFound, fail bool
	}{
		{name: "client end", table: header + listen + serverEnd + clientEnd, local: client, remote: server, uid: 1000, inode: 102},
		{name: "client end first", table: header + clientEnd + serverEnd, local: client, remote: server, uid: 1000, inode: 102},
		{name: "only the server's end", table: header + listen + serverEnd, local: client, remote: server, notFound: true},
		{name: "closing (FIN_WAIT2)", table: header + serverEnd + line("0100007F:B26E", "0100007F:1F90", "05", "1000", "102"), local: client, remote: server, notFound: true},
		{name: "TIME_WAIT", table: header + line("0100007F:B26E", "0100007F:1F90", "06", "0", "0"), local: client, remote: server, notFound: true},
		{name: "another port", table: header + clientEnd, local: ap("127.0.0.1:45679"), remote: server, notFound: true},
		{name: "another address", table: header + clientEnd, local: ap("127.0.0.2:45678"), remote: server, notFound: true},
		{name: "empty", table: header, local: client, remote: server, notFound: true},
		{name: "ipv6", table: header + v6serverEnd + v6clientEnd, local: v6client, remote: v6server, uid: 1001, inode: 202},
		{name: "ipv6 is not ipv4", table: header + v6clientEnd, local: client, remote: server, notFound: true},
		{name: "v4-mapped", table: header + mappedClientEnd, local: client, remote: server, uid: 1002, inode: 302},
		{name: "v4-mapped asked mapped", table: header + mappedClientEnd, local: ap("[::ffff:127.0.0.1]:45678"), remote: ap("[::ffff:127.0.0.1]:8080"), uid: 1002, inode: 302},
		{name: "short line", table: header + "   0: 0100007F:B26E 0100007F:1F90 01\n", local: client, remote: server, fail: true},
		{name: "bad uid", table: header + line("0100007F:B26E", "0100007F:1F90", "01", "x", "102"), local: client, remote: server, fail: true},
		{name: "bad address", table: header + line("0100007G:B26E", "0100007F:1F90", "01", "0", "102"), local: client, remote: server, fail: true},
	} {
		uid, inode, err := FindSocket(strings.NewReader(c.table), binary.LittleEndian, c.local, c.remote)
		switch {
		case c.notFound:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %d %d %v, want ErrNotFound", c.name, uid, inode, err)
			}
		case c.fail:
			if err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %d %d %v, want a parse error", c.name, uid, inode, err)
			}
		case err != nil || uid != c.uid || inode != c.inode:
			t.Errorf("%s: %d %d %v, want uid %d inode %d", c.name, uid, inode, err, c.uid, c.inode)
		}
	}
}

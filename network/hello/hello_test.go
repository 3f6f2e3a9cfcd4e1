package hello

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"
)

// captureConn records what a tls.Client writes and ends its handshake at
// the first read, so the capture is exactly the client's first flight.
type captureConn struct{ buf bytes.Buffer }

func (c *captureConn) Write(p []byte) (int, error)      { return c.buf.Write(p) }
func (c *captureConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *captureConn) Close() error                     { return nil }
func (c *captureConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *captureConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *captureConn) SetDeadline(time.Time) error      { return nil }
func (c *captureConn) SetReadDeadline(time.Time) error  { return nil }
func (c *captureConn) SetWriteDeadline(time.Time) error { return nil }

// goHello is the first flight crypto/tls sends with cfg.
func goHello(t testing.TB, cfg *tls.Config) []byte {
	t.Helper()
	c := &captureConn{}
	if err := tls.Client(c, cfg).Handshake(); err == nil {
		t.Fatal("handshake with a silent server succeeded")
	}
	if c.buf.Len() == 0 {
		t.Fatal("crypto/tls wrote nothing")
	}
	return c.buf.Bytes()
}

// unframe joins the fragments of the handshake records in b.
func unframe(t testing.TB, b []byte) []byte {
	t.Helper()
	var msg []byte
	for len(b) > 0 {
		if len(b) < 5 || b[0] != 22 {
			t.Fatalf("not a handshake record: % x", b[:min(len(b), 5)])
		}
		n := int(b[3])<<8 | int(b[4])
		msg = append(msg, b[5:5+n]...)
		b = b[5+n:]
	}
	return msg
}

// frame splits msg into handshake records of the given sizes, the last
// size repeating.
func frame(msg []byte, sizes ...int) []byte {
	var b []byte
	for i := 0; len(msg) > 0; i++ {
		n := min(sizes[min(i, len(sizes)-1)], len(msg))
		b = append(b, 22, 3, 1, byte(n>>8), byte(n))
		b = append(b, msg[:n]...)
		msg = msg[n:]
	}
	return b
}

func vec8(parts ...[]byte) []byte {
	c := bytes.Join(parts, nil)
	return append([]byte{byte(len(c))}, c...)
}

func vec16(parts ...[]byte) []byte {
	c := bytes.Join(parts, nil)
	return append([]byte{byte(len(c) >> 8), byte(len(c))}, c...)
}

func u16b(v int) []byte { return []byte{byte(v >> 8), byte(v)} }

func ext(typ int, data []byte) []byte { return append(u16b(typ), vec16(data)...) }

// sni is server_name extension data with one host_name entry per name.
func sni(names ...string) []byte {
	var entries [][]byte
	for _, n := range names {
		entries = append(entries, append([]byte{0}, vec16([]byte(n))...))
	}
	return vec16(entries...)
}

// ch builds a ClientHello; zero fields get sane values.
type ch struct {
	version []byte
	sid     []byte
	suites  []byte // the vector, length included
	comp    []byte // the vector, length included
	exts    [][]byte
	rawExts []byte // replaces the extensions block, length included
	noExts  bool
	tail    []byte // after the extensions block
}

func (c ch) body() []byte {
	b := c.version
	if b == nil {
		b = []byte{3, 3}
	}
	b = append(append([]byte{}, b...), make([]byte, 32)...)
	b = append(b, vec8(c.sid)...)
	if c.suites == nil {
		c.suites = vec16([]byte{0x13, 0x01})
	}
	if c.comp == nil {
		c.comp = vec8([]byte{0})
	}
	b = append(append(b, c.suites...), c.comp...)
	switch {
	case c.rawExts != nil:
		b = append(b, c.rawExts...)
	case !c.noExts:
		b = append(b, vec16(c.exts...)...)
	}
	return append(b, c.tail...)
}

func (c ch) msg() []byte {
	body := c.body()
	return append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
}

func (c ch) records() []byte { return frame(c.msg(), maxRecordLen) }

// checkPrefixes parses every proper prefix of full (a whole ClientHello
// and nothing more) and wants a ShortError whose Need does not overshoot.
func checkPrefixes(t *testing.T, full []byte) {
	t.Helper()
	for i := 0; i < len(full); i++ {
		_, err := Parse(full[:i:i])
		var se *ShortError
		if !errors.As(err, &se) || !errors.Is(err, ErrShort) {
			t.Fatalf("prefix of %d/%d bytes: %v, want a ShortError", i, len(full), err)
		}
		if se.Need < 1 || i+se.Need > len(full) {
			t.Fatalf("prefix of %d/%d bytes: Need %d, want 1..%d", i, len(full), se.Need, len(full)-i)
		}
	}
}

func TestGoClientHellos(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  *tls.Config
		want Hello // Len is filled in
	}{
		{"server name", &tls.Config{ServerName: "example.com"}, Hello{SNI: true, ServerName: "example.com"}},
		{"upper case and trailing dot", &tls.Config{ServerName: "WWW.Example.COM."}, Hello{SNI: true, ServerName: "www.example.com"}},
		{"no server name", &tls.Config{InsecureSkipVerify: true}, Hello{}},
		{"IP address: no SNI sent", &tls.Config{ServerName: "192.0.2.1"}, Hello{}},
		{"ALPN, TLS 1.2 only", &tls.Config{ServerName: "pypi.org", NextProtos: []string{"h2", "http/1.1"}, MaxVersion: tls.VersionTLS12},
			Hello{SNI: true, ServerName: "pypi.org", ALPN: []string{"h2", "http/1.1"}}},
		{"TLS 1.3 only", &tls.Config{ServerName: "files.pythonhosted.org", MinVersion: tls.VersionTLS13},
			Hello{SNI: true, ServerName: "files.pythonhosted.org"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := goHello(t, c.cfg)
			msg := unframe(t, raw)
			for _, sizes := range [][]int{{maxRecordLen}, {1}, {7, 3, 100}, {4}, {3, 1, 2}, {len(msg) - 1}} {
				full := frame(msg, sizes...)
				want := c.want
				want.Len = len(full)
				got, err := Parse(full)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("records of %v: got %+v, %v; want %+v", sizes, got, err, want)
				}
				if err := agreeWithGo(got, full); err != nil {
					t.Fatalf("records of %v: %v", sizes, err)
				}
				// What follows (here a ChangeCipherSpec record) is not read.
				got, err = Parse(append(full[:len(full):len(full)], 20, 3, 3, 0, 1, 1))
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("records of %v and a CCS record: got %+v, %v; want %+v", sizes, got, err, want)
				}
				checkPrefixes(t, full)
			}
		})
	}
}

// echConfigList is an ECHConfigList (RFC 9849 section 4) with a fresh
// X25519 key, the suite crypto/tls supports.
func echConfigList(t *testing.T, publicName string) []byte {
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	contents := bytes.Join([][]byte{
		{7},          // config_id
		u16b(0x0020), // DHKEM(X25519, HKDF-SHA256)
		vec16(key.PublicKey().Bytes()),
		vec16(u16b(1), u16b(1)), // HKDF-SHA256, AES-128-GCM
		{0},                     // maximum_name_length
		vec8([]byte(publicName)),
		vec16(), // no extensions
	}, nil)
	return vec16(append(u16b(extECH), vec16(contents)...))
}

func TestGoECH(t *testing.T) {
	raw := goHello(t, &tls.Config{
		ServerName:                     "secret.example",
		MinVersion:                     tls.VersionTLS13,
		EncryptedClientHelloConfigList: echConfigList(t, "public.example"),
	})
	got, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ECH || !got.SNI || got.ServerName != "public.example" || got.Len != len(raw) {
		t.Fatalf("got %+v, want ECH with the outer name public.example", got)
	}
	if bytes.Contains(raw, []byte("secret")) {
		t.Fatal("the inner name is in the clear; the capture is not an ECH hello")
	}
}

func TestHandBuiltECH(t *testing.T) {
	// An outer ECHClientHello: type 0, HKDF-SHA256/AES-128-GCM, config 7,
	// an encapsulated key and a payload (contents do not matter here).
	echExt := bytes.Join([][]byte{{0}, u16b(1), u16b(1), {7}, vec16(make([]byte, 32)), vec16(make([]byte, 100))}, nil)
	for _, c := range []struct {
		name string
		exts [][]byte
		want Hello
	}{
		{"ECH with outer name", [][]byte{ext(extServerName, sni("cdn.example")), ext(extECH, echExt)}, Hello{SNI: true, ServerName: "cdn.example", ECH: true}},
		{"ECH without a name", [][]byte{ext(extECH, echExt)}, Hello{ECH: true}},
		{"ECH draft code point", [][]byte{ext(0xfe0a, echExt), ext(extServerName, sni("a.example"))}, Hello{SNI: true, ServerName: "a.example", ECH: true}},
		{"ESNI", [][]byte{ext(extESNI, []byte{1, 2, 3})}, Hello{ECH: true}},
		{"ech_outer_extensions alone is not ECH", [][]byte{ext(0xfd00, vec8(u16b(10)))}, Hello{}},
		{"unknown extension", [][]byte{ext(0xfe0e, nil)}, Hello{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := ch{exts: c.exts}.records()
			c.want.Len = len(b)
			got, err := Parse(b)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
			if err := agreeWithGo(got, b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValid(t *testing.T) {
	long := strings.Repeat("a", 63)
	name253 := strings.Join([]string{long, long, long, strings.Repeat("b", 61)}, ".")
	withSNI := func(name string) []byte { return ch{exts: [][]byte{ext(0, sni(name))}}.records() }
	ssl30 := ch{}.records()
	ssl30[2] = 0
	for _, c := range []struct {
		name string
		b    []byte
		want Hello
	}{
		{"no extensions (TLS 1.2)", ch{noExts: true}.records(), Hello{}},
		{"empty extensions block", ch{}.records(), Hello{}},
		{"record version 3.0", ssl30, Hello{}},
		{"session id of 32", ch{sid: make([]byte, 32)}.records(), Hello{}},
		{"253-byte name", withSNI(name253), Hello{SNI: true, ServerName: name253}},
		{"253-byte name and a dot", withSNI(name253 + "."), Hello{SNI: true, ServerName: name253}},
		{"underscore", withSNI("_a.b_c.example"), Hello{SNI: true, ServerName: "_a.b_c.example"}},
		{"punycode", withSNI("xn--bcher-kva.example"), Hello{SNI: true, ServerName: "xn--bcher-kva.example"}},
		{"hex-looking label not last", withSNI("0x10.example"), Hello{SNI: true, ServerName: "0x10.example"}},
		{"numeric labels not last", withSNI("1.2.3.example"), Hello{SNI: true, ServerName: "1.2.3.example"}},
		{"one-label name", withSNI("localhost"), Hello{SNI: true, ServerName: "localhost"}},
		{"ALPN and SNI", ch{exts: [][]byte{ext(16, vec16(vec8([]byte("h2")))), ext(0, sni("x.example"))}}.records(),
			Hello{SNI: true, ServerName: "x.example", ALPN: []string{"h2"}}},
		{"20000-byte padding: two records", ch{exts: [][]byte{ext(0, sni("big.example")), ext(21, make([]byte, 20000))}}.records(),
			Hello{SNI: true, ServerName: "big.example"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.want.Len = len(c.b)
			got, err := Parse(c.b[:len(c.b):len(c.b)])
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
			if err := agreeWithGo(got, c.b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	good := ch{exts: [][]byte{ext(0, sni("example.com"))}}.msg()
	rec := func(msg []byte) []byte { return frame(msg, maxRecordLen) }
	withExts := func(exts ...[]byte) []byte { return rec(ch{exts: exts}.msg()) }
	sniExt := func(names ...string) []byte { return withExts(ext(0, sni(names...))) }
	for _, c := range []struct {
		name string
		b    []byte
		want error
		text string
	}{
		{"HTTP request", []byte("GET / HTTP/1.1\r\n"), ErrNotTLS, "first byte 0x47"},
		{"SSH banner", []byte("SSH-2.0-OpenSSH_9.6\r\n"), ErrNotTLS, ""},
		{"record version 2", []byte{22, 2, 0, 0, 10}, ErrNotTLS, "version 2.x"},
		{"SSLv2-compatible hello", []byte{0x80, 0x2e, 1, 3, 1, 0, 0x15}, ErrMalformed, "SSLv2"},
		{"alert record", []byte{21, 3, 1, 0, 2, 2, 40}, ErrNotHandshake, "type 21 (alert)"},
		{"ChangeCipherSpec record", []byte{20, 3, 3, 0, 1, 1}, ErrNotHandshake, "type 20 (change_cipher_spec)"},
		{"application data record", []byte{23, 3, 3, 0, 2, 'h', 'i'}, ErrNotHandshake, "type 23"},
		{"heartbeat record", []byte{24, 3, 3, 0, 3, 1, 0, 0}, ErrNotHandshake, "type 24"},
		{"one byte of a ChangeCipherSpec", []byte{20}, ErrNotHandshake, "type 20"},
		{"two bytes of an alert", []byte{21, 3}, ErrNotHandshake, "type 21"},
		{"content type 21, version 2", []byte{21, 2, 0, 0, 2}, ErrNotTLS, "0x15"},
		{"content type 25", []byte{25, 3, 3, 0, 1, 0}, ErrNotTLS, "0x19"},
		{"zero-length record", []byte{22, 3, 1, 0, 0}, ErrMalformed, "record length 0"},
		{"record over 16384", []byte{22, 3, 1, 0x40, 1}, ErrMalformed, "record length 16385"},
		{"ServerHello", rec([]byte{2, 0, 0, 1, 0}), ErrMalformed, "type 2"},
		{"handshake type seen in a partial record", []byte{22, 3, 1, 1, 0, 11}, ErrMalformed, "type 11"},
		{"alert between records", append(frame(good, 10)[:15], 21, 3, 3, 0, 2, 2, 40), ErrMalformed, "record of type 21"},
		{"bytes after the hello in its record", rec(append(good[:len(good):len(good)], 0, 0)), ErrMalformed, "2 bytes follow"},
		{"message longer than the cap", []byte{22, 3, 1, 0, 4, 1, 1, 0, 0}, ErrTooLong, ""},
		{"records beyond the cap", frame(ch{exts: [][]byte{ext(21, make([]byte, 60000))}}.msg(), 1), ErrTooLong, ""},
		{"legacy_version 2.0", rec(ch{version: []byte{2, 0}}.msg()), ErrMalformed, "legacy_version"},
		{"random cut off", rec([]byte{1, 0, 0, 10, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0}), ErrMalformed, "random cut off"},
		{"session id of 33", rec(ch{sid: make([]byte, 33)}.msg()), ErrMalformed, "legacy_session_id of 33"},
		{"cipher suites past the end", rec(ch{suites: []byte{0xff, 0xff, 0x13, 0x01}, noExts: true}.msg()), ErrMalformed, "cipher_suites: length or contents cut off"},
		{"odd cipher suites", rec(ch{suites: vec16([]byte{0x13}), noExts: true}.msg()), ErrMalformed, "cipher_suites of 1"},
		{"empty cipher suites", rec(ch{suites: vec16(), noExts: true}.msg()), ErrMalformed, "cipher_suites of 0"},
		{"no compression methods", rec(ch{comp: vec8(), noExts: true}.msg()), ErrMalformed, "no legacy_compression"},
		{"extensions length too long", rec(ch{rawExts: append(u16b(50), ext(0, sni("a.example"))...)}.msg()), ErrMalformed, "extensions: length or contents cut off"},
		{"extensions length cut off", rec(ch{rawExts: []byte{0}}.msg()), ErrMalformed, "extensions: length or contents cut off"},
		{"bytes after extensions", rec(ch{tail: []byte{0}}.msg()), ErrMalformed, "1 bytes after the extensions"},
		{"extension header cut off", rec(ch{rawExts: vec16([]byte{0, 0, 0})}.msg()), ErrMalformed, "extension 0x0000: length or contents cut off"},
		{"extension data truncated", rec(ch{rawExts: vec16([]byte{0, 0, 0, 9, 0, 7})}.msg()), ErrMalformed, "extension 0x0000: length or contents cut off"},
		{"duplicate server_name extension", withExts(ext(0, sni("a.example")), ext(0, sni("b.example"))), ErrMalformed, "twice"},
		{"duplicate other extension", withExts(ext(16, vec16(vec8([]byte("h2")))), ext(16, vec16(vec8([]byte("h2"))))), ErrMalformed, "twice"},
		{"two host names", sniExt("a.example", "b.example"), ErrMalformed, "more than one entry"},
		{"same host name twice", sniExt("a.example", "a.example"), ErrMalformed, "more than one entry"},
		{"empty server_name data", withExts(ext(0, nil)), ErrMalformed, "server_name list: length or contents cut off"},
		{"empty server_name list", withExts(ext(0, vec16())), ErrMalformed, "empty server_name list"},
		{"server_name list too long", withExts(ext(0, append(u16b(40), 0, 0, 1, 'a'))), ErrMalformed, "server_name list: length or contents cut off"},
		{"host name too long", withExts(ext(0, vec16([]byte{0, 0, 30, 'a'}))), ErrMalformed, "host_name: length or contents cut off"},
		{"bytes after the list", withExts(ext(0, append(sni("a.example"), 0))), ErrMalformed, "after the server_name list"},
		{"other name type", withExts(ext(0, vec16(append([]byte{1}, vec16([]byte("a.example"))...)))), ErrMalformed, "type 1"},
		{"empty name", sniExt(""), ErrMalformed, "empty server name"},
		{"lone dot", sniExt("."), ErrMalformed, "empty server name"},
		{"two trailing dots", sniExt("a.example.."), ErrMalformed, "empty label"},
		{"leading dot", sniExt(".a.example"), ErrMalformed, "empty label"},
		{"UTF-8", sniExt("bücher.example"), ErrMalformed, "not ASCII"},
		{"IPv4 literal", sniExt("192.0.2.1"), ErrMalformed, "IP address"},
		{"IPv4 literal with dot", sniExt("10.0.0.1."), ErrMalformed, "IP address"},
		{"IPv6 literal", sniExt("::1"), ErrMalformed, "IP address"},
		{"bracketed IPv6", sniExt("[2001:db8::1]"), ErrMalformed, "IP address"},
		{"inet_aton number", sniExt("127.1"), ErrMalformed, "ends in a number"},
		{"decimal address", sniExt("2130706433"), ErrMalformed, "ends in a number"},
		{"hex address", sniExt("0x7f000001"), ErrMalformed, "ends in a number"},
		{"space", sniExt("a b.example"), ErrMalformed, "contains ' '"},
		{"NUL byte", sniExt("good.example\x00.evil"), ErrMalformed, "contains '\\x00'"},
		{"wildcard", sniExt("*.example"), ErrMalformed, "contains '*'"},
		{"label of 64", sniExt(strings.Repeat("a", 64) + ".example"), ErrMalformed, "label of 64"},
		{"name of 254", sniExt(strings.Repeat("abc.", 63) + "ab"), ErrMalformed, "254 bytes"},
		{"empty ALPN list", withExts(ext(16, vec16())), ErrMalformed, "empty ALPN list"},
		{"empty ALPN name", withExts(ext(16, vec16(vec8()))), ErrMalformed, "empty ALPN protocol name"},
		{"ALPN name too long", withExts(ext(16, vec16([]byte{5, 'h'}))), ErrMalformed, "ALPN protocol name: length or contents cut off"},
		{"ALPN list too long", withExts(ext(16, []byte{0, 9, 2, 'h', '2'})), ErrMalformed, "ALPN list: length or contents cut off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, err := Parse(c.b[:len(c.b):len(c.b)])
			if !errors.Is(err, c.want) || !strings.Contains(errText(err), c.text) {
				t.Fatalf("got %+v, %v; want %v containing %q", h, err, c.want, c.text)
			}
			if !reflect.DeepEqual(h, Hello{}) {
				t.Fatalf("an error came with %+v", h)
			}
		})
	}
}

// TestTooLongEarly: a declared length past the cap is refused as soon as
// the handshake header is in, not after buffering 64 KiB.
func TestTooLongEarly(t *testing.T) {
	b := frame(ch{exts: [][]byte{ext(21, make([]byte, MaxLen))}}.msg(), maxRecordLen)
	if _, err := Parse(b[:9]); !errors.Is(err, ErrTooLong) {
		t.Fatalf("got %v, want ErrTooLong from the first 9 bytes", err)
	}
	// The cap counts record headers: the same message fits in 2-byte
	// records and not in 1-byte ones.
	msg := ch{exts: [][]byte{ext(21, make([]byte, 12000))}}.msg()
	if _, err := Parse(frame(msg, 1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("%d-byte message in 1-byte records: got %v, want ErrTooLong", len(msg), err)
	}
	if b := frame(msg, 2); len(b) > MaxLen {
		t.Fatalf("test broken: %d bytes in 2-byte records", len(b))
	} else if _, err := Parse(b); err != nil {
		t.Fatalf("%d-byte message in 2-byte records (%d bytes): %v", len(msg), len(b), err)
	}
}

// TestDribble feeds a client that sends 1-byte records, calling Parse
// only when Need bytes have come: the calls stay few (a lower bound that
// grows with what is known), not one per byte.
func TestDribble(t *testing.T) {
	raw := goHello(t, &tls.Config{ServerName: "example.com"})
	full := frame(unframe(t, raw), 1)
	calls, have := 0, 0
	for {
		calls++
		h, err := Parse(full[:have:have])
		var se *ShortError
		if errors.As(err, &se) {
			have += se.Need
			continue
		}
		if err != nil || h.ServerName != "example.com" || h.Len != len(full) {
			t.Fatalf("got %+v, %v", h, err)
		}
		break
	}
	if calls > 100 {
		t.Fatalf("%d calls for %d bytes; Need should let a caller wait for more", calls, len(full))
	}
	t.Logf("%d calls for %d bytes in 1-byte records", calls, len(full))
}

// TestFirstRecordNotHandshake: a ClientHello behind a record of another
// type is never reached, however the record and the hello are cut.
func TestFirstRecordNotHandshake(t *testing.T) {
	raw := goHello(t, &tls.Config{ServerName: "example.com"})
	for _, first := range [][]byte{
		{20, 3, 3, 0, 1, 1},       // ChangeCipherSpec
		{21, 3, 1, 0, 2, 1, 0},    // warning alert close_notify
		{23, 3, 3, 0, 1, 0},       // application data
		{21, 3, 3, 0, 2, 2, 0x28}, // fatal alert
	} {
		b := append(append([]byte{}, first...), raw...)
		for n := 1; n <= len(b); n++ {
			if _, err := Parse(b[:n:n]); !errors.Is(err, ErrNotHandshake) {
				t.Fatalf("% x then a ClientHello, first %d bytes: %v, want ErrNotHandshake", first, n, err)
			}
		}
	}
}

func TestIsRecord(t *testing.T) {
	hello := goHello(t, &tls.Config{ServerName: "example.com"})
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, false},
		{"a hello", hello, true},
		{"one byte of a hello", hello[:1], true},
		{"ChangeCipherSpec", []byte{20, 3, 3, 0, 1, 1}, true},
		{"alert, one byte", []byte{21}, true},
		{"application data", []byte{23, 3, 3}, true},
		{"heartbeat", []byte{24, 3}, true},
		{"type 19", []byte{19, 3}, false},
		{"type 25", []byte{25, 3}, false},
		{"version 2", []byte{21, 2}, false},
		{"zero-length handshake", []byte{22, 3, 1, 0, 0}, true},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), false},
		{"SSLv2-compatible hello", []byte{0x80, 0x2e, 1, 3, 1}, false},
	} {
		if got := IsRecord(c.b); got != c.want {
			t.Errorf("%s: IsRecord(% x) = %v, want %v", c.name, c.b[:min(len(c.b), 8)], got, c.want)
		}
	}
}

func TestIsTLS(t *testing.T) {
	hello := goHello(t, &tls.Config{ServerName: "example.com"})
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, false},
		{"one byte of a hello", hello[:1], true},
		{"record header", hello[:5], true},
		{"PeekLen bytes", hello[:PeekLen], true},
		{"whole hello", hello, true},
		{"HTTP", []byte("GET / HTTP/1.1\r\n"), false},
		{"SSH", []byte("SSH-2.0-x\r\n"), false},
		{"record version 2", []byte{22, 2}, false},
		{"zero-length record", []byte{22, 3, 1, 0, 0}, false},
		{"over-long record", []byte{22, 3, 1, 0x40, 1}, false},
		{"ServerHello", []byte{22, 3, 3, 0, 50, 2}, false},
		{"application data", []byte{23, 3, 3, 0, 50}, false},
		{"SSLv2-compatible hello", []byte{0x80, 0x2e, 1, 3, 1}, true},
		{"high byte, not SSLv2", []byte{0x80, 0x2e, 4, 3}, false},
		{"high byte, SSLv2 2.0", []byte{0x80, 0x2e, 1, 2}, false},
	} {
		if got := IsTLS(c.b); got != c.want {
			t.Errorf("%s: IsTLS(% x) = %v, want %v", c.name, c.b[:min(len(c.b), 8)], got, c.want)
		}
	}
}

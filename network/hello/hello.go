// Package hello reads the first flight of a TLS connection, the
// ClientHello, out of the bytes a proxy has received so far. The allow
// mode (DESIGN.md section 11) uses it before a byte goes upstream: behind
// CONNECT or SOCKS5, the server name the client asks the TLS server for
// (SNI) must be the host it asked the proxy for, and it must not be hidden
// by Encrypted Client Hello. It decrypts and changes nothing: there is no
// TLS interception, only a look at the plaintext first message.
//
// It does no I/O. Parse is called with what has arrived; it says how many
// bytes more it needs at least until the ClientHello is complete, and the
// whole ClientHello is capped at MaxLen bytes. Malformed input is an
// error, never a panic.
//
// Two layers. The records are framed here, for the proxy's needs: it
// judges a stream before the stream is whole, bounds what it buffers, and
// refuses a stream whose first record is not a handshake record.
// crypto/tls cannot do this part: its server drops a warning alert that
// comes before the ClientHello and reads the hello behind it, so the
// bytes it would judge are not the bytes another server reads first. The
// message inside is read with golang.org/x/crypto/cryptobyte, the reader
// crypto/tls unmarshals handshake messages with. crypto/tls's
// ClientHelloInfo is not used: it skips server_name entries of types
// other than host_name (a server that does not could take one for the
// name) and refuses a trailing dot, where the rules below are the
// proxy's. The tests check that where a crypto/tls server accepts the
// same bytes, it reads the same server name, ALPN list and ECH.
//
// Decisions about the server name (RFC 6066 section 3), each an error
// naming the problem:
//   - at most one server_name extension (RFC 8446: an extension type at
//     most once), holding exactly one entry, of type host_name;
//   - the name is ASCII: an internationalised name travels as its
//     A-label (xn--...), raw UTF-8 is refused;
//   - letters, digits, hyphens and underscores in labels of 1 to 63
//     bytes, 253 bytes in all; upper case is folded to lower case;
//   - one trailing dot is dropped (RFC 6066 says none is sent, but some
//     clients pass the name they were given); "" or ".." are errors;
//   - no IP literal (RFC 6066 forbids them): an IPv6 or IPv4 address, or
//     a name whose last label is a number (all digits, or 0x and hex),
//     which URL and inet_aton parsers read as an IPv4 address.
//
// A ClientHello without a server_name extension is not an error: SNI is
// false and the caller decides (the allow mode refuses it behind CONNECT
// to a name).
package hello

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/crypto/cryptobyte"
)

// MaxLen caps the bytes of the records that carry one ClientHello,
// record headers included. Real ones are a few hundred bytes to 2 KiB
// (post-quantum key shares); 64 KiB bounds what a proxy buffers per
// connection before deciding.
const MaxLen = 64 << 10

// PeekLen is how many first bytes IsTLS needs to decide as well as the
// record header and the handshake type allow.
const PeekLen = 6

const (
	recordHeaderLen = 5
	maxRecordLen    = 1 << 14 // RFC 8446 section 5.1: TLSPlaintext.length
	typeHandshake   = 22
	// The content types a TLS record over TCP can have: change_cipher_spec
	// (20), alert (21), handshake (22), application_data (23) (RFC 8446
	// section 5.1) and heartbeat (24, RFC 6520).
	firstRecordType    = 20
	lastRecordType     = 24
	typeClientHello    = 1
	handshakeHeaderLen = 4

	extServerName = 0x0000
	extALPN       = 0x0010
	// extECH is encrypted_client_hello (RFC 9849, draft-ietf-tls-esni-18 and later).
	extECH = 0xfe0d
	// extESNI is the encrypted_server_name extension of the ESNI drafts,
	// which Firefox shipped for a while.
	extESNI = 0xffce
	// ECH drafts 8 to 12 used 0xfe08 to 0xfe0c.
	extECHDraftFirst = 0xfe08
	extECHDraftLast  = 0xfe0c
)

var (
	// ErrShort: the bytes so far are a valid beginning; more are needed.
	// The error is a *ShortError saying how many at least.
	ErrShort = errors.New("TLS ClientHello incomplete")
	// ErrNotTLS: the first bytes do not start a TLS record (IsRecord is
	// false) nor an SSLv2-compatible hello.
	ErrNotTLS = errors.New("not a TLS handshake")
	// ErrNotHandshake: the first bytes start a TLS record of another
	// content type than handshake (a ChangeCipherSpec, an alert,
	// application data...), where the ClientHello must come first.
	ErrNotHandshake = errors.New("TLS record of another type than handshake where the ClientHello must come first")
	// ErrTooLong: the ClientHello would take more than MaxLen bytes.
	ErrTooLong = fmt.Errorf("TLS ClientHello longer than %d bytes", MaxLen)
	// ErrMalformed: a field is out of bounds or breaks a rule of the
	// package comment; the error's text names the field.
	ErrMalformed = errors.New("malformed TLS ClientHello")
)

// ShortError is the error Parse returns while the ClientHello is
// incomplete. Need is a lower bound of the bytes still to come: a caller
// can wait for that many before calling Parse again, which keeps a client
// that dribbles one byte at a time from costing a full parse per byte.
type ShortError struct{ Need int }

func (e *ShortError) Error() string {
	return fmt.Sprintf("%v: at least %d more bytes needed", ErrShort, e.Need)
}

// Is makes errors.Is(err, ErrShort) true.
func (e *ShortError) Is(target error) bool { return target == ErrShort }

// Hello is what a ClientHello tells a proxy.
type Hello struct {
	// Len is how many bytes of the input the records carrying the
	// ClientHello took; what follows belongs to later records.
	Len int
	// SNI is true when a server_name extension named a host.
	SNI bool
	// ServerName is that host, lower-case, without a trailing dot. With
	// ECH it is the outer, public name; the real one is encrypted.
	ServerName string
	// ECH is true when the hello carries Encrypted Client Hello
	// (0xfe0d), one of its earlier draft code points (0xfe08-0xfe0c) or
	// ESNI (0xffce): the server may route on a name nobody here can read.
	ECH bool
	// ALPN lists the application protocols offered, in order (nil when
	// the extension is absent).
	ALPN []string
}

// IsTLS reports whether b, the first bytes of a stream, can be the start
// of a TLS ClientHello: a handshake record (0x16, version 3.x, a length of
// 1 to 16384, handshake type 1) or the SSLv2-compatible form old clients
// send (which Parse refuses: it has no room for a server name). It checks
// the bytes there are, up to PeekLen; with fewer it may say true for a
// stream Parse then rejects. An empty b is not TLS.
func IsTLS(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	if b[0] == typeHandshake {
		if len(b) > 1 && b[1] != 3 {
			return false
		}
		if len(b) >= recordHeaderLen {
			if n := int(b[3])<<8 | int(b[4]); n == 0 || n > maxRecordLen {
				return false
			}
		}
		return len(b) <= recordHeaderLen || b[5] == typeClientHello
	}
	return isSSLv2(b)
}

// IsRecord reports whether b, the first bytes of a stream, can be the
// start of a TLS record of any content type TLS over TCP has (20 to 24:
// change_cipher_spec, alert, handshake, application_data, heartbeat) with
// the record version 3.x. It looks at two bytes at most; with one, the
// content type alone decides. A server reads such bytes as TLS records,
// so a proxy that checks the server name must find the ClientHello in
// the first of them (Parse says ErrNotHandshake when the first is of
// another type) and must not look past one for a later ClientHello.
func IsRecord(b []byte) bool {
	if len(b) == 0 || b[0] < firstRecordType || b[0] > lastRecordType {
		return false
	}
	return len(b) == 1 || b[1] == 3
}

// isSSLv2 matches the SSL 2.0-compatible ClientHello (RFC 5246 appendix
// E.2): a two-byte length with the top bit set, message type 1, and a
// version of 3.x.
func isSSLv2(b []byte) bool {
	if len(b) == 0 || b[0]&0x80 == 0 {
		return false
	}
	if len(b) > 2 && b[2] != typeClientHello {
		return false
	}
	return len(b) <= 3 || b[3] == 3
}

// Parse reads the ClientHello at the start of b, which may span several
// handshake records. Until it is complete the error is a *ShortError
// (errors.Is(err, ErrShort)); other errors are final and wrap ErrNotTLS,
// ErrNotHandshake, ErrTooLong or ErrMalformed. It reads the records of
// the ClientHello only: it never skips a record to look for one.
func Parse(b []byte) (Hello, error) {
	var msg []byte // the handshake message, gathered from the records
	want := -1     // its length with header, once the header is in
	off := 0
	for {
		rest := b[off:]
		if err := checkRecordHeader(rest, off == 0); err != nil {
			return Hello{}, err
		}
		if len(rest) < recordHeaderLen {
			return Hello{}, short(b, headerShortfall(len(rest), len(msg), want))
		}
		n := int(rest[3])<<8 | int(rest[4])
		end := off + recordHeaderLen + n
		if end > MaxLen {
			return Hello{}, ErrTooLong
		}
		frag := rest[recordHeaderLen:min(len(rest), recordHeaderLen+n)]

		var err error
		if want, err = checkHandshakeHeader(msg, frag, want); err != nil {
			return Hello{}, err
		}

		if end > len(b) {
			need := end - len(b)
			if want >= 0 && want > len(msg)+n {
				need += recordHeaderLen + want - (len(msg) + n)
			}
			return Hello{}, short(b, need)
		}
		if want >= 0 && len(msg)+n > want {
			return Hello{}, malformed("%d bytes follow the ClientHello in its last record; it must be alone there", len(msg)+n-want)
		}
		if msg == nil {
			// A hello in one record, the usual case, is read in place;
			// the capacity is cut so a later record's append copies.
			msg = frag[:len(frag):len(frag)]
		} else {
			msg = append(msg, frag...)
		}
		off = end
		if want >= 0 && len(msg) == want {
			h, err := parseClientHello(msg[handshakeHeaderLen:])
			if err != nil {
				return Hello{}, err
			}
			h.Len = off
			return h, nil
		}
	}
}

// headerShortfall is how many more bytes a hello needs when the next
// record's header is cut after restLen bytes: the rest of the header and
// what the message still lacks (its length with header is want, or -1
// before its own header is whole), at least one byte of it.
func headerShortfall(restLen, msgLen, want int) int {
	more := max(1, handshakeHeaderLen-msgLen)
	if want >= 0 {
		more = want - msgLen
	}
	return recordHeaderLen - restLen + more
}

// checkHandshakeHeader checks the handshake header as far as the message
// so far (msg) and the next fragment hold it, since it may arrive in
// pieces: a stream that is no ClientHello is refused at once. Once the
// header is whole it returns the message's length with header, else want
// as given.
func checkHandshakeHeader(msg, frag []byte, want int) (int, error) {
	var hdr [handshakeHeaderLen]byte
	k := copy(hdr[:], msg)
	k += copy(hdr[k:], frag)
	if k >= 1 && hdr[0] != typeClientHello {
		return want, malformed("handshake message of type %d where a ClientHello (1) must come first", hdr[0])
	}
	if k == handshakeHeaderLen {
		want = handshakeHeaderLen + (int(hdr[1])<<16 | int(hdr[2])<<8 | int(hdr[3]))
		// Each record carries at least one byte behind a header.
		if want > MaxLen-recordHeaderLen {
			return want, ErrTooLong
		}
	}
	return want, nil
}

// short is the ShortError for needing need more bytes after b, or
// ErrTooLong when that would pass the cap anyway.
func short(b []byte, need int) error {
	if len(b)+need > MaxLen {
		return ErrTooLong
	}
	return &ShortError{Need: need}
}

// checkRecordHeader checks the part of a record header in b (up to five
// bytes): a handshake record of version 3.x with a length of 1 to 16384.
// Zero-length handshake fragments are forbidden by RFC 8446 section 5.1.
func checkRecordHeader(b []byte, first bool) error {
	if len(b) == 0 {
		return nil
	}
	if b[0] != typeHandshake {
		switch {
		case first && isSSLv2(b):
			return malformed("SSLv2-compatible ClientHello: it cannot carry a server name")
		case first && IsRecord(b):
			return fmt.Errorf("%w: a record of type %d (%s) comes first", ErrNotHandshake, b[0], recordTypeName(b[0]))
		case first:
			return fmt.Errorf("%w: first byte 0x%02x, a TLS handshake record starts with 0x16", ErrNotTLS, b[0])
		}
		return malformed("record of type %d before the ClientHello ended; its records must follow each other", b[0])
	}
	if len(b) > 1 && b[1] != 3 {
		if first {
			return fmt.Errorf("%w: record version %d.x, TLS records have 3.x", ErrNotTLS, b[1])
		}
		return malformed("record version %d.x, TLS records have 3.x", b[1])
	}
	if len(b) >= recordHeaderLen {
		if n := int(b[3])<<8 | int(b[4]); n == 0 || n > maxRecordLen {
			return malformed("record length %d; a handshake record carries 1 to %d bytes", n, maxRecordLen)
		}
	}
	return nil
}

// recordTypeName names a content type between firstRecordType and
// lastRecordType, for errors.
func recordTypeName(t byte) string {
	switch t {
	case 20:
		return "change_cipher_spec"
	case 21:
		return "alert"
	case 23:
		return "application_data"
	case 24:
		return "heartbeat"
	}
	return "handshake"
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// cutOff is the error for a field whose length prefix or contents run
// past the bytes left.
func cutOff(field string) error {
	return malformed("%s: length or contents cut off", field)
}

// parseClientHello reads the body of a ClientHello message (RFC 8446
// section 4.1.2; RFC 5246 section 7.4.1.2 for the optional extensions).
func parseClientHello(body []byte) (Hello, error) {
	s := cryptobyte.String(body)
	var vers uint16
	var sid, suites, comp, exts cryptobyte.String
	switch {
	case !s.ReadUint16(&vers):
		return Hello{}, malformed("legacy_version cut off")
	case vers>>8 != 3:
		return Hello{}, malformed("legacy_version 0x%04x; TLS has 3.x", vers)
	case !s.Skip(32):
		return Hello{}, malformed("random cut off")
	case !s.ReadUint8LengthPrefixed(&sid):
		return Hello{}, cutOff("legacy_session_id")
	case len(sid) > 32:
		return Hello{}, malformed("legacy_session_id of %d bytes; at most 32", len(sid))
	case !s.ReadUint16LengthPrefixed(&suites):
		return Hello{}, cutOff("cipher_suites")
	case len(suites) < 2 || len(suites)%2 != 0:
		return Hello{}, malformed("cipher_suites of %d bytes; a non-empty list of 2-byte values", len(suites))
	case !s.ReadUint8LengthPrefixed(&comp):
		return Hello{}, cutOff("legacy_compression_methods")
	case len(comp) == 0:
		return Hello{}, malformed("no legacy_compression_methods; at least one is sent")
	case s.Empty():
		return Hello{}, nil // TLS 1.0-1.2 allow a hello without extensions
	case !s.ReadUint16LengthPrefixed(&exts):
		return Hello{}, cutOff("extensions")
	case !s.Empty():
		return Hello{}, malformed("%d bytes after the extensions", len(s))
	}
	return parseExtensions(exts)
}

// parseExtensions reads the extensions block of a ClientHello: each type
// at most once, server_name and ALPN checked, ECH noticed.
func parseExtensions(exts cryptobyte.String) (Hello, error) {
	var h Hello
	var seen [1 << 16 / 64]uint64
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) {
			return Hello{}, malformed("extension type cut off")
		}
		if !exts.ReadUint16LengthPrefixed(&data) {
			return Hello{}, cutOff(fmt.Sprintf("extension 0x%04x", typ))
		}
		if seen[typ/64]&(1<<(typ%64)) != 0 {
			return Hello{}, malformed("extension 0x%04x twice; an extension type may appear once", typ)
		}
		seen[typ/64] |= 1 << (typ % 64)
		var err error
		switch {
		case typ == extServerName:
			h.ServerName, err = parseServerName(data)
			h.SNI = err == nil
		case typ == extALPN:
			h.ALPN, err = parseALPN(data)
		case isECH(typ):
			h.ECH = true
		}
		if err != nil {
			return Hello{}, err
		}
	}
	return h, nil
}

// isECH is true for the code points of Encrypted Client Hello, its drafts
// and ESNI.
func isECH(typ uint16) bool {
	return typ == extECH || typ == extESNI || extECHDraftFirst <= typ && typ <= extECHDraftLast
}

// parseServerName reads a server_name extension: a ServerNameList with
// exactly one host_name entry (the package comment says why).
func parseServerName(data cryptobyte.String) (string, error) {
	var list, name cryptobyte.String
	var typ uint8
	switch {
	case !data.ReadUint16LengthPrefixed(&list):
		return "", cutOff("server_name list")
	case !data.Empty():
		return "", malformed("%d bytes after the server_name list", len(data))
	case !list.ReadUint8(&typ):
		return "", malformed("empty server_name list")
	case typ != 0:
		return "", malformed("server_name entry of type %d; only host_name (0) exists", typ)
	case !list.ReadUint16LengthPrefixed(&name):
		return "", cutOff("server_name host_name")
	case !list.Empty():
		return "", malformed("more than one entry in the server_name list; one host_name is allowed")
	}
	return hostName(name)
}

// hostName checks and normalises a server name (see the package comment).
func hostName(raw []byte) (string, error) {
	for _, c := range raw {
		if c >= 0x80 {
			return "", malformed("server name %q is not ASCII; an internationalised name is sent as its xn-- form", quote(raw))
		}
	}
	s := strings.TrimSuffix(string(raw), ".")
	if s == "" {
		return "", malformed("empty server name %q", quote(raw))
	}
	if strings.Contains(s, ":") || isIP(s) {
		return "", malformed("server name %q is an IP address; RFC 6066 allows only host names", quote(raw))
	}
	if len(s) > 253 {
		return "", malformed("server name of %d bytes; a host name has at most 253", len(s))
	}
	b := []byte(s)
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != '.' {
			c := b[i]
			switch {
			case 'A' <= c && c <= 'Z':
				b[i] = c + 'a' - 'A'
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
			default:
				return "", malformed("server name %q contains %q; a host name has letters, digits, hyphens, underscores and dots", quote(raw), rune(c))
			}
			continue
		}
		switch l := i - start; {
		case l == 0:
			return "", malformed("server name %q has an empty label", quote(raw))
		case l > 63:
			return "", malformed("server name %q has a label of %d bytes; at most 63", quote(raw), l)
		}
		start = i + 1
	}
	name := string(b)
	if isNumber(name[strings.LastIndexByte(name, '.')+1:]) {
		return "", malformed("server name %q ends in a number, which parsers read as an IPv4 address; RFC 6066 allows only host names", quote(raw))
	}
	return name, nil
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// isNumber is true for a label URL parsers take for (part of) an IPv4
// address: decimal digits, or 0x and hex digits.
func isNumber(label string) bool {
	digits := "0123456789"
	if len(label) >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X') {
		label, digits = label[2:], "0123456789abcdefABCDEF"
		if label == "" {
			return true // "0x" alone is 0 to inet_aton
		}
	}
	for i := 0; i < len(label); i++ {
		if !strings.ContainsRune(digits, rune(label[i])) {
			return false
		}
	}
	return label != ""
}

// quote shortens a name for an error message; a hostile one can be 64 KiB.
func quote(raw []byte) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "..."
	}
	return string(raw)
}

// parseALPN reads application_layer_protocol_negotiation (RFC 7301): a
// non-empty list of non-empty names.
func parseALPN(data cryptobyte.String) ([]string, error) {
	var list cryptobyte.String
	switch {
	case !data.ReadUint16LengthPrefixed(&list):
		return nil, cutOff("ALPN list")
	case !data.Empty():
		return nil, malformed("%d bytes after the ALPN list", len(data))
	case list.Empty():
		return nil, malformed("empty ALPN list")
	}
	var names []string
	for !list.Empty() {
		var name cryptobyte.String
		if !list.ReadUint8LengthPrefixed(&name) {
			return nil, cutOff("ALPN protocol name")
		}
		if name.Empty() {
			return nil, malformed("empty ALPN protocol name")
		}
		names = append(names, string(name))
	}
	return names, nil
}

// Package dnsmsg is the wire side of the allow mode's DNS resolver
// (DESIGN.md section 11): it reads one query and writes the few replies
// the resolver sends, with no I/O. The resolver answers A and AAAA for
// allowed names, with the addresses that passed the checks, and refuses
// everything else, so the jailed command cannot use DNS to carry data out.
//
// The subset is small on purpose (RFC 1035, RFC 6891 for EDNS(0)):
//   - A query has exactly one question, QR=0, opcode QUERY, class IN, no
//     answer or authority records, at most one additional record, which
//     must be an EDNS(0) OPT, and no bytes after it.
//   - The question name is at most 255 bytes on the wire (253 written
//     out), labels of at most 63 bytes, without compression: a query's
//     name is its first, so a compression pointer in it can only point
//     into the header or at itself (a loop) and is refused.
//   - A name with a byte other than a letter, digit, hyphen or underscore
//     is read but refused: it cannot be an allowed host, and "a.b" inside
//     one label must never be mistaken for two labels.
//
// What goes wrong says how to reply: ParseQuery's error is an *Error
// carrying FORMERR, REFUSED or BADVERS, which ReplyTo turns into the
// reply, or it wraps ErrNoReply when nothing may be sent back (too short
// to carry an ID, or a response rather than a query: answering those would
// let two resolvers bounce packets between them).
package dnsmsg

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Message size caps: 512 bytes over UDP without relying on the client's
// EDNS buffer size (RFC 1035 section 4.2.1; larger answers are cut and
// flagged TC so the client retries over TCP), 65535 over TCP (the length
// prefix's limit).
const (
	MaxUDP = 512
	MaxTCP = 65535
)

const (
	headerLen   = 12
	maxWireName = 255 // RFC 1035 section 2.3.4, root label included
	maxLabel    = 63
	optLen      = 11 // an OPT record without options

	flagQR = 1 << 15
	flagTC = 1 << 9
	flagRD = 1 << 8
	flagRA = 1 << 7

	opcodeQuery = 0
	classIN     = 1
)

// Type is a resource record type.
type Type uint16

// The types this package treats specially; others pass through as numbers.
const (
	TypeA    Type = 1
	TypeAAAA Type = 28
	typeOPT  Type = 41
)

var typeNames = map[Type]string{
	1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT",
	28: "AAAA", 33: "SRV", 35: "NAPTR", 41: "OPT", 43: "DS", 46: "RRSIG",
	48: "DNSKEY", 64: "SVCB", 65: "HTTPS", 99: "SPF", 251: "IXFR",
	252: "AXFR", 255: "ANY", 257: "CAA",
}

// String gives the mnemonic, or TYPEn for others (RFC 3597).
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("TYPE%d", uint16(t))
}

// RCode is a response code; values above 15 travel partly in the OPT
// record (RFC 6891 section 6.1.3).
type RCode uint16

// The response codes this package sends.
const (
	RCodeSuccess RCode = 0
	RCodeFormErr RCode = 1
	RCodeRefused RCode = 5
	RCodeBadVers RCode = 16
)

var rcodeNames = map[RCode]string{
	0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP",
	5: "REFUSED", 16: "BADVERS",
}

func (r RCode) String() string {
	if s, ok := rcodeNames[r]; ok {
		return s
	}
	return fmt.Sprintf("RCODE%d", uint16(r))
}

// Query is one parsed question and what a reply must echo.
type Query struct {
	ID uint16
	// Name is the question name written out: lower case, no trailing dot,
	// "" for the root. Bytes other than letters, digits, '-' and '_'
	// appear as \DDD (then ParseQuery has refused the query).
	Name string
	Type Type
	// RD (recursion desired) is echoed in replies.
	RD bool
	// EDNS: the query had an OPT record, so replies carry one.
	EDNS bool
	// UDPSize is the buffer size the client's OPT record announced (0
	// without EDNS). Replies keep to MaxUDP regardless; it is here for
	// the report.
	UDPSize uint16

	opcode uint8
	// noQuestion: ParseQuery gave up before the question; replies have none.
	noQuestion bool
	// wire is the question name as sent, case kept, echoed in replies
	// (some clients check the case they randomised, as in DNS 0x20).
	wire []byte
}

// ErrNoReply: the message must not be answered.
var ErrNoReply = errors.New("not a DNS query to answer")

// Error is a query ParseQuery rejects with a reply: RCode is FORMERR
// (malformed), REFUSED (well-formed but outside what the resolver serves)
// or BADVERS (an EDNS version other than 0).
type Error struct {
	RCode  RCode
	Reason string
}

func (e *Error) Error() string {
	if e.RCode == RCodeFormErr {
		return "malformed DNS query (FORMERR): " + e.Reason
	}
	return fmt.Sprintf("DNS query refused (%v): %s", e.RCode, e.Reason)
}

func formErr(format string, args ...any) error {
	return &Error{RCode: RCodeFormErr, Reason: fmt.Sprintf(format, args...)}
}

// ParseQuery reads a query (see the package comment for what is
// accepted). On an error the returned Query holds what was read before it
// (the ID always when the header is there, the name when the question
// was read), for the report and for ReplyTo.
func ParseQuery(b []byte) (Query, error) {
	q := Query{noQuestion: true}
	if len(b) < headerLen {
		return q, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrNoReply, len(b), headerLen)
	}
	q.ID = u16(b)
	flags := u16(b[2:])
	q.opcode = uint8(flags>>11) & 0xf
	q.RD = flags&flagRD != 0
	if flags&flagQR != 0 {
		return q, fmt.Errorf("%w: a response (QR=1), not a query", ErrNoReply)
	}
	if q.opcode != opcodeQuery {
		return q, &Error{RCode: RCodeRefused, Reason: fmt.Sprintf("opcode %d; only QUERY (0) is served", q.opcode)}
	}
	qd, an, ns, ar := u16(b[4:]), u16(b[6:]), u16(b[8:]), u16(b[10:])
	if qd != 1 {
		return q, formErr("%d questions; a query has exactly one", qd)
	}

	wire, name, clean, off, err := readName(b, headerLen)
	if err != nil {
		return q, err
	}
	if len(b)-off < 4 {
		return q, formErr("question type and class cut off")
	}
	q.noQuestion, q.wire, q.Name = false, wire, name
	q.Type = Type(u16(b[off:]))
	class := u16(b[off+2:])
	off += 4

	if an != 0 || ns != 0 {
		return q, formErr("%d answer and %d authority records; a query has none", an, ns)
	}
	if ar > 1 {
		return q, formErr("%d additional records; only one EDNS OPT record is read", ar)
	}
	if ar == 1 {
		var version uint8
		if off, version, err = readOPT(b, off, &q); err != nil {
			return q, err
		}
		if version != 0 {
			return q, &Error{RCode: RCodeBadVers, Reason: fmt.Sprintf("EDNS version %d; only 0 is served", version)}
		}
	}
	if off != len(b) {
		return q, formErr("%d bytes after the last record", len(b)-off)
	}
	if q.Type == typeOPT {
		return q, formErr("question of type OPT, which is a pseudo-record")
	}
	if class != classIN {
		return q, &Error{RCode: RCodeRefused, Reason: fmt.Sprintf("class %d; only IN (1) is served", class)}
	}
	if !clean {
		return q, &Error{RCode: RCodeRefused, Reason: fmt.Sprintf("name %q has a byte other than a letter, digit, '-' or '_'", name)}
	}
	return q, nil
}

func u16(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

// readName reads the name at off. It returns the name's wire form
// (decompressed, case kept), its lower-case written form, whether every
// byte was a letter, digit, '-' or '_', and the offset after it.
//
// Compression pointers are followed only backwards, to before every
// position the name has visited, and never into the header: that bounds
// the walk by the message size, so a loop is an error and not a hang.
func readName(b []byte, off int) (wire []byte, name string, clean bool, next int, err error) {
	var sb strings.Builder
	clean, next = true, -1
	lowest, pos := off, off
	for {
		if pos >= len(b) {
			return nil, "", false, 0, formErr("name at offset %d runs past the end", off)
		}
		c := int(b[pos])
		switch c & 0xc0 {
		case 0x00:
			if c == 0 {
				wire = append(wire, 0)
				if next < 0 {
					next = pos + 1
				}
				return wire, sb.String(), clean, next, nil
			}
			if pos+1+c > len(b) {
				return nil, "", false, 0, formErr("label of %d bytes at offset %d runs past the end", c, pos)
			}
			if len(wire)+1+c+1 > maxWireName {
				return nil, "", false, 0, formErr("name at offset %d longer than %d bytes", off, maxWireName)
			}
			label := b[pos+1 : pos+1+c]
			wire = append(wire, b[pos:pos+1+c]...)
			if len(wire) > 1+c {
				sb.WriteByte('.')
			}
			for _, ch := range label {
				switch {
				case 'A' <= ch && ch <= 'Z':
					sb.WriteByte(ch + 'a' - 'A')
				case 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9', ch == '-', ch == '_':
					sb.WriteByte(ch)
				default:
					clean = false
					fmt.Fprintf(&sb, "\\%03d", ch)
				}
			}
			pos += 1 + c
		case 0xc0:
			if pos+2 > len(b) {
				return nil, "", false, 0, formErr("compression pointer at offset %d cut off", pos)
			}
			ptr := int(u16(b[pos:]) & 0x3fff)
			if next < 0 {
				next = pos + 2
			}
			if ptr < headerLen {
				return nil, "", false, 0, formErr("compression pointer at offset %d points into the header", pos)
			}
			if ptr >= lowest {
				return nil, "", false, 0, formErr("compression pointer at offset %d to %d does not point back before the name: a loop", pos, ptr)
			}
			lowest, pos = ptr, ptr
		default:
			return nil, "", false, 0, formErr("label type 0x%02x at offset %d; extended label types are not supported", c&0xc0, pos)
		}
	}
}

// readOPT reads the EDNS(0) OPT record at off (RFC 6891 section 6.1.2):
// root owner name, the client's UDP size as class, extended RCODE,
// version and flags as TTL, and options that fill the RDATA exactly.
func readOPT(b []byte, off int, q *Query) (next int, version uint8, err error) {
	if len(b)-off < optLen {
		return 0, 0, formErr("additional record cut off")
	}
	if b[off] != 0 {
		return 0, 0, formErr("additional record is not an EDNS OPT record with the root name")
	}
	if t := Type(u16(b[off+1:])); t != typeOPT {
		return 0, 0, formErr("additional record of type %v; only an EDNS OPT record is read", t)
	}
	q.EDNS = true
	q.UDPSize = u16(b[off+3:])
	version = b[off+6]
	rdlen := int(u16(b[off+9:]))
	off += optLen
	if len(b)-off < rdlen {
		return 0, 0, formErr("OPT data of %d bytes, %d left", rdlen, len(b)-off)
	}
	for opts := b[off : off+rdlen]; len(opts) > 0; {
		if len(opts) < 4 {
			return 0, 0, formErr("EDNS option header cut off")
		}
		n := int(u16(opts[2:]))
		if len(opts)-4 < n {
			return 0, 0, formErr("EDNS option %d of %d bytes, %d left", u16(opts), n, len(opts)-4)
		}
		opts = opts[4+n:]
	}
	return off + rdlen, version, nil
}

// Refused is the REFUSED reply to q.
func Refused(q Query) []byte { return reply(q, RCodeRefused) }

// FormErr is the FORMERR reply for a message with the given ID: a header
// alone, as nothing else in the message can be trusted.
func FormErr(id uint16) []byte {
	return appendHeader(make([]byte, 0, headerLen), id, 0, false, RCodeFormErr, false, 0, 0, 0)
}

// ReplyTo is the reply to a message ParseQuery rejected with err: FORMERR,
// REFUSED or BADVERS as the *Error says, or nil when nothing may be sent
// (ErrNoReply, or an error not from ParseQuery).
func ReplyTo(q Query, err error) []byte {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	if e.RCode == RCodeFormErr {
		return FormErr(q.ID)
	}
	return reply(q, e.RCode)
}

// Answer is the NOERROR reply to q with the addresses of the question's
// type: A records for the IPv4 addresses of addrs when q asks for A, AAAA
// for the IPv6 ones when it asks for AAAA (an IPv4-mapped address counts
// as IPv6 and a zone is dropped), duplicates once, in order, each with
// ttl (whole seconds, at most 2^31-1). With no address of that type, or
// for a question of any other type, the reply has no records (NODATA):
// the name exists for the command, just not with that type, which lets
// stub resolvers asking A and AAAA (or HTTPS) together go on with what
// they got. The policy decides what gets an Answer at all; Refused is
// for the rest.
//
// The reply fits in limit bytes (clamped to MaxUDP..MaxTCP: MaxUDP for
// UDP, MaxTCP for TCP); records that do not fit are left out and TC is
// set, which sends a UDP client to TCP. q comes from a successful
// ParseQuery (or is built with Name and Type).
func Answer(q Query, addrs []netip.Addr, ttl time.Duration, limit int) []byte {
	limit = min(max(limit, MaxUDP), MaxTCP)
	b := reply(q, RCodeSuccess)
	if q.EDNS {
		b = b[:len(b)-optLen] // added back after the answers
	}
	reserve := 0
	if q.EDNS {
		reserve = optLen
	}
	secs := ttlSeconds(ttl)
	seen := make(map[netip.Addr]bool)
	var n uint16
	truncated := false
	for _, a := range addrs {
		a = a.WithZone("")
		if q.noQuestion || (q.Type != TypeA && q.Type != TypeAAAA) || !a.IsValid() || a.Is4() != (q.Type == TypeA) || seen[a] {
			continue
		}
		ip := a.AsSlice()
		if len(b)+12+len(ip)+reserve > limit {
			truncated = true
			break
		}
		seen[a] = true
		// The owner is a pointer to the question name at offset 12.
		b = append(b, 0xc0, headerLen, byte(q.Type>>8), byte(q.Type), 0, classIN,
			byte(secs>>24), byte(secs>>16), byte(secs>>8), byte(secs), 0, byte(len(ip)))
		b = append(b, ip...)
		n++
	}
	if q.EDNS {
		b = appendOPT(b, RCodeSuccess)
	}
	b[6], b[7] = byte(n>>8), byte(n)
	if truncated {
		b[2] |= flagTC >> 8
	}
	return b
}

func ttlSeconds(d time.Duration) uint32 {
	s := d / time.Second
	switch {
	case s < 0:
		return 0
	case s > 1<<31-1: // RFC 2181 section 8
		return 1<<31 - 1
	}
	return uint32(s)
}

// reply is the header, the question and the OPT record for q with rcode.
// Its size is bounded (12 + 255 + 4 + 11 bytes), well under MaxUDP.
func reply(q Query, rcode RCode) []byte {
	wire := q.wire
	if wire == nil && !q.noQuestion {
		wire = nameWire(q.Name)
	}
	b := make([]byte, 0, MaxUDP)
	var qd, ar uint16
	if !q.noQuestion {
		qd = 1
	}
	if q.EDNS {
		ar = 1
	}
	b = appendHeader(b, q.ID, q.opcode, q.RD, rcode, false, qd, 0, ar)
	if qd == 1 {
		b = append(b, wire...)
		b = append(b, byte(q.Type>>8), byte(q.Type), 0, classIN)
	}
	if q.EDNS {
		b = appendOPT(b, rcode)
	}
	return b
}

// nameWire encodes a written-out name for a Query not made by ParseQuery.
// Labels that are empty or too long are dropped so the message stays
// well-formed; ParseQuery never gives such a name.
func nameWire(name string) []byte {
	var w []byte
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > maxLabel || len(w)+1+len(l)+1 > maxWireName {
			continue
		}
		w = append(w, byte(len(l)))
		w = append(w, l...)
	}
	return append(w, 0)
}

// appendHeader writes a response header. RA is set: the resolver answers
// for any name it serves, and Go's resolver takes a reply with neither AA
// nor RA and no records for a lame referral.
func appendHeader(b []byte, id uint16, opcode uint8, rd bool, rcode RCode, tc bool, qd, an, ar uint16) []byte {
	flags := uint16(flagQR|flagRA) | uint16(opcode&0xf)<<11 | uint16(rcode&0xf)
	if rd {
		flags |= flagRD
	}
	if tc {
		flags |= flagTC
	}
	return append(b, byte(id>>8), byte(id), byte(flags>>8), byte(flags),
		byte(qd>>8), byte(qd), byte(an>>8), byte(an), 0, 0, byte(ar>>8), byte(ar))
}

// appendOPT writes the reply's OPT record: our UDP size MaxUDP, the upper
// bits of rcode, version 0, no flags, no options.
func appendOPT(b []byte, rcode RCode) []byte {
	return append(b, 0, byte(typeOPT>>8), byte(typeOPT), MaxUDP>>8, MaxUDP&0xff,
		byte(rcode>>4), 0, 0, 0, 0, 0)
}

// ErrShort: the bytes so far do not hold a whole TCP-framed message. The
// error is a *ShortError saying how many more are needed.
var ErrShort = errors.New("DNS message over TCP incomplete")

// ShortError is ReadTCP's error while a message is incomplete; Need is
// exactly how many more bytes complete it (or its length prefix).
type ShortError struct{ Need int }

func (e *ShortError) Error() string {
	return fmt.Sprintf("%v: %d more bytes needed", ErrShort, e.Need)
}

// Is makes errors.Is(err, ErrShort) true.
func (e *ShortError) Is(target error) bool { return target == ErrShort }

// ReadTCP takes the first message off b, which holds what a TCP stream
// has delivered so far: messages each behind a two-byte big-endian length
// (RFC 1035 section 4.2.2). msg and rest share b's memory. A
// zero-length message is returned as such; ParseQuery then says
// ErrNoReply, and the resolver should close the connection.
func ReadTCP(b []byte) (msg, rest []byte, err error) {
	if len(b) < 2 {
		return nil, b, &ShortError{Need: 2 - len(b)}
	}
	n := int(u16(b))
	if len(b)-2 < n {
		return nil, b, &ShortError{Need: n - (len(b) - 2)}
	}
	return b[2 : 2+n : 2+n], b[2+n:], nil
}

// AppendTCP appends msg to dst behind its two-byte length.
func AppendTCP(dst, msg []byte) ([]byte, error) {
	if len(msg) > MaxTCP {
		return dst, fmt.Errorf("DNS message of %d bytes does not fit TCP framing (at most %d)", len(msg), MaxTCP)
	}
	dst = append(dst, byte(len(msg)>>8), byte(len(msg)))
	return append(dst, msg...), nil
}

package resolver

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// The wire side: one query read and the few replies the server sends,
// through golang.org/x/net/dns/dnsmessage (the Go team's parser and
// builder, the one the standard library's resolver uses). What the
// resolver accepts is a small subset on purpose (RFC 1035, RFC 6891):
//   - A query has exactly one question, QR=0, opcode QUERY, class IN, no
//     answer or authority records, at most one additional record, which
//     must be an EDNS(0) OPT with the root name, and no bytes after it.
//   - The question name is written without compression (it is the
//     message's first name, so a pointer can only lead into the header,
//     forwards or round a loop) and is at most 253 bytes written out.
//   - A name with a byte other than a letter, digit, hyphen or underscore
//     is read but refused: it cannot be an allowed host. dnsmessage
//     refuses a label holding a dot itself (golang/go#56246), so "a.b"
//     inside one label is never taken for two labels.
//
// What goes wrong says how to reply: parseQuery's error is a *queryError
// carrying FORMERR, REFUSED or BADVERS, which replyTo turns into the
// reply, or it wraps errNoReply when nothing may be sent back (too short
// to carry an ID, or a response rather than a query: answering those
// would let two resolvers bounce packets between them).

// Message size caps: 512 bytes over UDP without relying on the client's
// EDNS buffer size (RFC 1035 section 4.2.1; larger answers are cut and
// flagged TC so the client retries over TCP), 65535 over TCP (the length
// prefix's limit).
const (
	maxUDP = 512
	maxTCP = 65535
)

const (
	headerLen = 12
	optLen    = 11 // an OPT record with the root name and no options
	// rcodeBadVers is 16: 0 in the header, 1 in the OPT record's upper
	// bits (RFC 6891 section 6.1.3).
	rcodeBadVers dnsmessage.RCode = 16
)

// query is one parsed question and what a reply must echo.
type query struct {
	id uint16
	// name is the question name written out: lower case, no trailing
	// dot, "" for the root. Bytes other than letters, digits, '-' and
	// '_' appear as \DDD (then parseQuery has refused the query).
	name string
	typ  dnsmessage.Type
	// rd (recursion desired) is echoed in replies.
	rd bool
	// edns: the query had an OPT record, so replies carry one.
	edns bool
	// udpSize is what the client's OPT record announced (0 without
	// EDNS). Replies keep to maxUDP regardless.
	udpSize uint16

	opcode dnsmessage.OpCode
	// question is what replies echo, name case kept (some clients check
	// the case they randomised, as in DNS 0x20), when hasQuestion; without
	// it, parseQuery gave up before the question and replies have none.
	question    dnsmessage.Question
	hasQuestion bool
}

// errNoReply: the message must not be answered.
var errNoReply = errors.New("not a DNS query to answer")

// queryError is a query parseQuery rejects with a reply: rcode is
// FORMERR (malformed), REFUSED (well-formed but outside what the resolver
// serves) or BADVERS (an EDNS version other than 0).
type queryError struct {
	rcode  dnsmessage.RCode
	reason string
}

func (e *queryError) Error() string {
	if e.rcode == dnsmessage.RCodeFormatError {
		return "malformed DNS query (FORMERR): " + e.reason
	}
	return fmt.Sprintf("DNS query refused (%s): %s", rcodeName(e.rcode), e.reason)
}

func rcodeName(rc dnsmessage.RCode) string {
	if rc == rcodeBadVers {
		return "BADVERS" // dnsmessage has no name for it
	}
	return strings.ToUpper(strings.TrimPrefix(rc.String(), "RCode"))
}

func formErr(format string, args ...any) error {
	return &queryError{rcode: dnsmessage.RCodeFormatError, reason: fmt.Sprintf(format, args...)}
}

func refused(format string, args ...any) error {
	return &queryError{rcode: dnsmessage.RCodeRefused, reason: fmt.Sprintf(format, args...)}
}

// parseQuery reads a query (see the top of this file for what is
// accepted). On an error the query holds what was read before it (the ID
// when the header is there, the name once the one question was read), for
// the event and for replyTo.
func parseQuery(msg []byte) (query, error) {
	var q query
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return q, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errNoReply, len(msg), headerLen)
	}
	q.id, q.opcode, q.rd = h.ID, h.OpCode, h.RecursionDesired
	if h.Response {
		return q, fmt.Errorf("%w: a response (QR=1), not a query", errNoReply)
	}
	if h.OpCode != 0 {
		return q, refused("opcode %d; only QUERY (0) is served", h.OpCode)
	}
	question, err := p.Question()
	switch {
	case err == dnsmessage.ErrSectionDone:
		return q, formErr("no question; a query has exactly one")
	case isDotInLabel(err):
		return q, refused("a label holds a dot: %v", err)
	case err != nil:
		return q, formErr("question: %v", err)
	}
	if _, err := p.Question(); err != dnsmessage.ErrSectionDone {
		return q, formErr("more than one question, or a count past the data")
	}
	name, clean := writtenName(question.Name)
	q.question, q.hasQuestion, q.name, q.typ = question, true, name, question.Type
	end, err := questionEnd(msg, question.Name)
	if err != nil {
		return q, err
	}
	if _, err := p.AnswerHeader(); err != dnsmessage.ErrSectionDone {
		return q, formErr("answer records; a query has none")
	}
	if _, err := p.AuthorityHeader(); err != dnsmessage.ErrSectionDone {
		return q, formErr("authority records; a query has none")
	}
	if end, err = readOPT(&p, &q, end); err != nil {
		return q, err
	}
	if end != len(msg) {
		return q, formErr("%d bytes after the last record", len(msg)-end)
	}
	if q.typ == dnsmessage.TypeOPT {
		return q, formErr("question of type OPT, which is a pseudo-record")
	}
	if question.Class != dnsmessage.ClassINET {
		return q, refused("class %d; only IN (1) is served", question.Class)
	}
	if !clean {
		return q, refused("name %q has a byte other than a letter, digit, '-' or '_'", name)
	}
	return q, nil
}

// isDotInLabel tells dnsmessage's refusal of a label holding a dot, a
// name that is no host name (REFUSED), from a malformed one (FORMERR).
// dnsmessage exports no value for it, so its text is matched; a test pins
// it.
func isDotInLabel(err error) bool {
	return err != nil && strings.HasSuffix(err.Error(), "invalid dns name")
}

var errCompressed = &queryError{rcode: dnsmessage.RCodeFormatError,
	reason: "question name compressed; a query's name is its first and cannot point back"}

// questionEnd is the offset after the question, which must be written
// without compression: after the header, the labels of the name
// dnsmessage read, each behind its length, the root's zero byte, type and
// class. A name that points elsewhere reads the same but is sent
// differently. (Comparing bytes, not writing the question back with a
// Builder: that took half of parseQuery's time.)
func questionEnd(msg []byte, n dnsmessage.Name) (int, error) {
	off := headerLen
	if n.Length > 1 { // not the root, "."
		start := 0
		for i, ch := range n.Data[:n.Length] {
			if ch != '.' {
				continue
			}
			label := n.Data[start:i]
			if len(msg)-off < 1+len(label) || int(msg[off]) != len(label) || !bytes.Equal(msg[off+1:off+1+len(label)], label) {
				return 0, errCompressed
			}
			off, start = off+1+len(label), i+1
		}
	}
	if len(msg)-off < 1+4 || msg[off] != 0 {
		return 0, errCompressed
	}
	return off + 1 + 4, nil
}

// readOPT reads the additional section, which is empty or one EDNS(0) OPT
// record (RFC 6891 section 6.1.2) written at off, and returns the offset
// after it.
func readOPT(p *dnsmessage.Parser, q *query, off int) (int, error) {
	h, err := p.AdditionalHeader()
	switch {
	case err == dnsmessage.ErrSectionDone:
		return off, nil
	case err != nil:
		return 0, formErr("additional record: %v", err)
	case h.Type != dnsmessage.TypeOPT:
		return 0, formErr("additional record of type %s; only an EDNS OPT record is read", TypeName(h.Type))
	case h.Name.Length != 1:
		return 0, formErr("additional record is not an EDNS OPT record with the root name")
	}
	opt, err := p.OPTResource()
	if err != nil {
		return 0, formErr("OPT record: %v", err)
	}
	n := 0
	for _, o := range opt.Options {
		n += 4 + len(o.Data)
	}
	if n != int(h.Length) {
		return 0, formErr("EDNS options of %d bytes in OPT data of %d", n, h.Length)
	}
	if _, err := p.AdditionalHeader(); err != dnsmessage.ErrSectionDone {
		return 0, formErr("more than one additional record; only one EDNS OPT record is read")
	}
	q.edns, q.udpSize = true, uint16(h.Class)
	if v := byte(h.TTL >> 16); v != 0 {
		return 0, &queryError{rcode: rcodeBadVers, reason: fmt.Sprintf("EDNS version %d; only 0 is served", v)}
	}
	return off + optLen + n, nil
}

// writtenName is n written out lower case without the trailing dot, each
// byte other than a letter, digit, '-', '_' or the dot between labels as
// \DDD, and whether there was none. dnsmessage refuses a dot inside a
// label, so each '.' separates labels.
func writtenName(n dnsmessage.Name) (string, bool) {
	data := n.Data[:max(int(n.Length)-1, 0)] // without the trailing (or root's) dot
	plain := true                            // nothing to lower or escape: the common case, one copy
	for _, ch := range data {
		if !('a' <= ch && ch <= 'z' || '0' <= ch && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			plain = false
			break
		}
	}
	if plain {
		return string(data), true
	}
	var sb strings.Builder
	clean := true
	for _, ch := range data {
		switch {
		case 'A' <= ch && ch <= 'Z':
			sb.WriteByte(ch + 'a' - 'A')
		case 'a' <= ch && ch <= 'z', '0' <= ch && ch <= '9', ch == '-', ch == '_', ch == '.':
			sb.WriteByte(ch)
		default:
			clean = false
			fmt.Fprintf(&sb, "\\%03d", ch)
		}
	}
	return sb.String(), clean
}

// refusedReply is the REFUSED reply to q.
func refusedReply(q query) []byte { return newReply(q, dnsmessage.RCodeRefused, nil, 0, false) }

// servFail is the SERVFAIL reply to q: an upstream lookup failed or the
// resolver is busy, and the client may ask again.
func servFail(q query) []byte { return newReply(q, dnsmessage.RCodeServerFailure, nil, 0, false) }

// formErrReply is the FORMERR reply for a message with the given ID: a
// header alone, as nothing else in the message can be trusted.
func formErrReply(id uint16) []byte {
	return newReply(query{id: id}, dnsmessage.RCodeFormatError, nil, 0, false)
}

// replyTo is the reply to a message parseQuery rejected with err:
// FORMERR, REFUSED or BADVERS as the *queryError says, or nil when
// nothing may be sent (errNoReply, or an error not from parseQuery).
func replyTo(q query, err error) []byte {
	var e *queryError
	if !errors.As(err, &e) {
		return nil
	}
	if e.rcode == dnsmessage.RCodeFormatError {
		return formErrReply(q.id)
	}
	return newReply(q, e.rcode, nil, 0, false)
}

// answer is the NOERROR reply to q with the addresses of the question's
// type: A records for the IPv4 addresses of addrs when q asks for A, AAAA
// for the IPv6 ones when it asks for AAAA (an IPv4-mapped address counts
// as IPv6 and a zone is dropped), duplicates once, in order, each with
// ttl (whole seconds, at most 2^31-1). With no address of that type, or
// for a question of any other type, the reply has no records (NODATA):
// the name exists for the command, just not with that type, which lets
// stub resolvers asking A and AAAA (or HTTPS) together go on with what
// they got.
//
// The reply fits in limit bytes (clamped to maxUDP..maxTCP); records
// that do not fit are left out and TC is set, which sends a UDP client
// to TCP. q comes from a successful parseQuery.
func answer(q query, addrs []netip.Addr, ttl time.Duration, limit int) []byte {
	if !q.hasQuestion || (q.typ != dnsmessage.TypeA && q.typ != dnsmessage.TypeAAAA) {
		return newReply(q, dnsmessage.RCodeSuccess, nil, 0, false)
	}
	limit = min(max(limit, maxUDP), maxTCP)
	size := replySize(q)
	// Each record's owner is a pointer to the question name, or the root
	// name's one byte.
	owner := 2
	if q.question.Name.Length == 1 {
		owner = 1
	}
	rr := owner + 10 + 4
	if q.typ == dnsmessage.TypeAAAA {
		rr = owner + 10 + 16
	}
	seen := make(map[netip.Addr]bool)
	var fit []netip.Addr
	truncated := false
	for _, a := range addrs {
		a = a.WithZone("")
		if !a.IsValid() || a.Is4() != (q.typ == dnsmessage.TypeA) || seen[a] {
			continue
		}
		if size+rr > limit {
			truncated = true
			break
		}
		seen[a] = true
		fit = append(fit, a)
		size += rr
	}
	return newReply(q, dnsmessage.RCodeSuccess, fit, ttlSeconds(ttl), truncated)
}

// replySize is the size of the reply to q without records: header,
// question as sent (dnsmessage wrote it back byte for byte), OPT record.
func replySize(q query) int {
	n := headerLen
	if q.hasQuestion {
		n += int(q.question.Name.Length) + 1 + 4
		if q.question.Name.Length == 1 { // the root: one zero byte
			n--
		}
	}
	if q.edns {
		n += optLen
	}
	return n
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

// newReply builds the reply to q with rcode and addrs (all of q's type) as
// its records: the question when q has one, and an OPT record (our UDP
// size maxUDP, the upper bits of rcode, version 0, no options) when q had
// one. RA is set: the resolver answers for any name it serves, and Go's
// resolver takes a reply with neither AA nor RA and no records for a lame
// referral. A FORMERR reply is the header alone.
func newReply(q query, rcode dnsmessage.RCode, addrs []netip.Addr, ttl uint32, truncated bool) []byte {
	formerr := rcode == dnsmessage.RCodeFormatError
	h := dnsmessage.Header{ID: q.id, Response: true, RecursionAvailable: true, RCode: rcode & 0xf}
	if !formerr {
		h.OpCode, h.RecursionDesired, h.Truncated = q.opcode, q.rd, truncated
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, replySize(q)+len(addrs)*(12+16)), h)
	if len(addrs) > 0 {
		b.EnableCompression()
	}
	out, err := buildReply(&b, q, formerr, rcode, addrs, ttl)
	if err != nil {
		// Only a question dnsmessage read but cannot write back gets
		// here, and parseQuery refuses those as FORMERR.
		return newReply(query{id: q.id}, dnsmessage.RCodeFormatError, nil, 0, false)
	}
	return out
}

func buildReply(b *dnsmessage.Builder, q query, formerr bool, rcode dnsmessage.RCode, addrs []netip.Addr, ttl uint32) ([]byte, error) {
	if formerr {
		return b.Finish()
	}
	if q.hasQuestion {
		if err := b.StartQuestions(); err != nil {
			return nil, err
		}
		if err := b.Question(q.question); err != nil {
			return nil, err
		}
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	for _, a := range addrs {
		rh := dnsmessage.ResourceHeader{Name: q.question.Name, Class: dnsmessage.ClassINET, TTL: ttl}
		var err error
		if a.Is4() {
			err = b.AResource(rh, dnsmessage.AResource{A: a.As4()})
		} else {
			err = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
		}
		if err != nil {
			return nil, err
		}
	}
	if q.edns {
		if err := b.StartAdditionals(); err != nil {
			return nil, err
		}
		var rh dnsmessage.ResourceHeader
		if err := rh.SetEDNS0(maxUDP, rcode, false); err != nil {
			return nil, err
		}
		if err := b.OPTResource(rh, dnsmessage.OPTResource{}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// appendTCP appends msg to dst behind its two-byte length (RFC 1035
// section 4.2.2).
func appendTCP(dst, msg []byte) ([]byte, error) {
	if len(msg) > maxTCP {
		return dst, fmt.Errorf("DNS message of %d bytes does not fit TCP framing (at most %d)", len(msg), maxTCP)
	}
	dst = append(dst, byte(len(msg)>>8), byte(len(msg)))
	return append(dst, msg...), nil
}

package hello

import (
	"crypto/tls"
	"errors"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, never reads past len(b) (the slice has
// no spare capacity, and bytes beyond it do not change the outcome), and
// what it returns is consistent: a Hello's Len covers what decided it,
// its name is one hostName accepts, and a crypto/tls server that accepts
// the same bytes reads the same name, ALPN and ECH; a ShortError's Need stays under the
// cap; every other error is one of the documented kinds.
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 20s -fuzzminimizetime 1x ./network/hello/
//
// -fuzzminimizetime 1x: minimising each new input (60 s by default) would
// otherwise take most of a short run, with no execs shown meanwhile.
func FuzzParse(f *testing.F) {
	for _, cfg := range []*tls.Config{
		{ServerName: "example.com", NextProtos: []string{"h2", "http/1.1"}},
		{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12},
	} {
		raw := goHello(f, cfg)
		f.Add(raw)
		f.Add(frame(unframe(f, raw), 7, 3))
		f.Add(raw[:len(raw)/2])
	}
	f.Add(ch{exts: [][]byte{ext(0, sni("a.example", "b.example")), ext(extECH, []byte{0})}}.records())
	f.Add(ch{exts: [][]byte{ext(16, vec16(vec8([]byte("h2")))), ext(0, sni("x.example."))}}.records())
	f.Add(ch{noExts: true}.records())
	f.Add([]byte{0x80, 0x2e, 1, 3, 1})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Add(append([]byte{20, 3, 3, 0, 1, 1}, goHello(f, &tls.Config{ServerName: "example.com"})...))
	f.Add([]byte{21, 3, 1, 0, 2, 1, 0})

	f.Fuzz(func(t *testing.T, b []byte) {
		b = b[:len(b):len(b)]
		h, err := Parse(b)

		// The same bytes with different bytes behind them in memory give
		// the same answer.
		for _, fill := range []byte{0x00, 0xff} {
			buf := make([]byte, len(b), len(b)+64)
			copy(buf, b)
			spare := buf[len(b):cap(buf)]
			for i := range spare {
				spare[i] = fill
			}
			h2, err2 := Parse(buf)
			if !reflect.DeepEqual(h, h2) || errText(err) != errText(err2) {
				t.Fatalf("result depends on memory past len(b): %+v %v vs %+v %v", h, err, h2, err2)
			}
		}

		var se *ShortError
		switch {
		case err == nil:
			if h.Len < recordHeaderLen+handshakeHeaderLen || h.Len > len(b) || h.Len > MaxLen {
				t.Fatalf("Len %d for %d bytes", h.Len, len(b))
			}
			if h2, err := Parse(b[:h.Len:h.Len]); err != nil || !reflect.DeepEqual(h, h2) {
				t.Fatalf("the first Len bytes give %+v, %v; all give %+v", h2, err, h)
			}
			if err := agreeWithGo(h, b); err != nil {
				t.Fatal(err)
			}
			if h.SNI {
				if name, err := hostName([]byte(h.ServerName)); err != nil || name != h.ServerName {
					t.Fatalf("ServerName %q is not normalised: %q, %v", h.ServerName, name, err)
				}
			} else if h.ServerName != "" {
				t.Fatalf("ServerName %q without SNI", h.ServerName)
			}
		case errors.As(err, &se):
			if se.Need < 1 || len(b)+se.Need > MaxLen {
				t.Fatalf("Need %d after %d bytes", se.Need, len(b))
			}
			if !IsTLS(b) && len(b) > 0 {
				t.Fatalf("Parse waits for more but IsTLS(% x) is false", b[:min(len(b), PeekLen)])
			}
		case errors.Is(err, ErrNotTLS):
			if IsTLS(b) || IsRecord(b) {
				t.Fatalf("ErrNotTLS but IsTLS or IsRecord(% x) is true: %v", b[:min(len(b), PeekLen)], err)
			}
		case errors.Is(err, ErrNotHandshake):
			// Decided on the first record's type: what follows it is
			// never looked at.
			if !IsRecord(b) || IsTLS(b) || b[0] == typeHandshake {
				t.Fatalf("ErrNotHandshake for % x", b[:min(len(b), PeekLen)])
			}
			if _, err := Parse(b[:min(len(b), 2)]); !errors.Is(err, ErrNotHandshake) {
				t.Fatalf("ErrNotHandshake for % x but not for its first two bytes: %v", b[:min(len(b), PeekLen)], err)
			}
		case errors.Is(err, ErrMalformed), errors.Is(err, ErrTooLong):
		default:
			t.Fatalf("undocumented error %v", err)
		}
		if err != nil && !reflect.DeepEqual(h, Hello{}) {
			t.Fatalf("error %v came with %+v", err, h)
		}
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

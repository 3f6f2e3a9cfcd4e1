package hello

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// replayConn serves b to a TLS server and drops what the server writes
// (its alert).
type replayConn struct {
	captureConn
	r *bytes.Reader
}

func (c *replayConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *replayConn) Write(p []byte) (int, error) { return len(p), nil }

var errSeen = errors.New("ClientHello seen")

// goServerView is the ClientHello a crypto/tls server reads from b, or
// nil when it refuses b before it would choose a config.
func goServerView(b []byte) *tls.ClientHelloInfo {
	var info *tls.ClientHelloInfo
	cfg := &tls.Config{GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
		info = chi
		return nil, errSeen
	}}
	tls.Server(&replayConn{r: bytes.NewReader(b)}, cfg).Handshake()
	return info
}

// agreeWithGo: where Parse took the first h.Len bytes of b as hello h and
// a crypto/tls server accepts them too, both read the same server name
// (crypto/tls keeps its case), ALPN list and ECH.
func agreeWithGo(h Hello, b []byte) error {
	info := goServerView(b[:h.Len])
	if info == nil {
		return nil
	}
	if h.ServerName != strings.ToLower(info.ServerName) || h.SNI != (info.ServerName != "") {
		return fmt.Errorf("server name: Parse %q (SNI %v), crypto/tls %q", h.ServerName, h.SNI, info.ServerName)
	}
	if !slices.Equal(h.ALPN, info.SupportedProtos) {
		return fmt.Errorf("ALPN: Parse %q, crypto/tls %q", h.ALPN, info.SupportedProtos)
	}
	if ech := slices.ContainsFunc(info.Extensions, isECH); h.ECH != ech {
		return fmt.Errorf("ECH: Parse %v, crypto/tls's extensions %x", h.ECH, info.Extensions)
	}
	return nil
}

// TestDifferencesWithGo: where Parse and a crypto/tls server part ways,
// and why each is the proxy's choice.
func TestDifferencesWithGo(t *testing.T) {
	good := goHello(t, &tls.Config{ServerName: "example.com"})
	withSNI := func(data []byte) []byte { return ch{exts: [][]byte{ext(extServerName, data)}}.records() }
	for _, c := range []struct {
		name   string
		b      []byte
		goName string // "" when crypto/tls refuses the bytes
		parse  error  // nil when Parse accepts them
	}{
		// crypto/tls drops the warning alert and reads the hello behind
		// it; the proxy, which reads no further than the first record,
		// refuses.
		{"warning alert, then a hello", append([]byte{21, 3, 3, 0, 2, 1, 90}, good...), "example.com", ErrNotHandshake},
		// crypto/tls skips an entry of another type; a server that does
		// not could read "evil.example" as the name.
		{"another name type, then host_name", withSNI(vec16([]byte{1}, vec16([]byte("evil.example")), []byte{0}, vec16([]byte("good.example")))), "good.example", ErrMalformed},
		// crypto/tls reads an IP literal as a name; RFC 6066 forbids it.
		{"IP literal", withSNI(sni("192.0.2.1")), "192.0.2.1", ErrMalformed},
		// crypto/tls refuses a trailing dot; some clients send the name
		// they were given, and the proxy compares it without the dot.
		{"trailing dot", withSNI(sni("example.com.")), "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			switch info := goServerView(c.b); {
			case c.goName == "" && info != nil:
				t.Errorf("crypto/tls accepted the hello, name %q; want it refused", info.ServerName)
			case c.goName != "" && info == nil:
				t.Errorf("crypto/tls refused the hello; want it to read %q", c.goName)
			case c.goName != "" && info.ServerName != c.goName:
				t.Errorf("crypto/tls read %q, want %q", info.ServerName, c.goName)
			}
			if _, err := Parse(c.b); !errors.Is(err, c.parse) {
				t.Errorf("Parse: %v, want %v", err, c.parse)
			}
		})
	}
}

// readHello reads a stream as the proxy does, reads of at most readSize
// bytes, until Parse decides, and returns what it read and the result.
func readHello(r io.Reader, readSize int) ([]byte, Hello, error) {
	var buf []byte
	p := make([]byte, readSize)
	for {
		n, rerr := r.Read(p)
		buf = append(buf, p[:n]...)
		h, err := Parse(buf)
		if !errors.Is(err, ErrShort) || rerr != nil {
			return buf, h, errors.Join(err, rerr)
		}
	}
}

// TestPipedGoHellos: hellos a crypto/tls client writes into a net.Pipe,
// read in pieces of several sizes: Parse takes each at its last byte and
// reads what crypto/tls's server reads.
func TestPipedGoHellos(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  *tls.Config
		want Hello
	}{
		{"SNI", &tls.Config{ServerName: "example.com"}, Hello{SNI: true, ServerName: "example.com"}},
		{"SNI and ALPN, TLS 1.2", &tls.Config{ServerName: "pypi.org", NextProtos: []string{"h2", "http/1.1"}, MaxVersion: tls.VersionTLS12},
			Hello{SNI: true, ServerName: "pypi.org", ALPN: []string{"h2", "http/1.1"}}},
		{"TLS 1.3", &tls.Config{ServerName: "files.pythonhosted.org", MinVersion: tls.VersionTLS13}, Hello{SNI: true, ServerName: "files.pythonhosted.org"}},
		{"no SNI", &tls.Config{InsecureSkipVerify: true}, Hello{}},
	} {
		for _, readSize := range []int{1, 5, 6, 100, 4096} {
			t.Run(fmt.Sprintf("%s/reads of %d", c.name, readSize), func(t *testing.T) {
				client, server := net.Pipe()
				done := make(chan error, 1)
				go func() { done <- tls.Client(client, c.cfg).Handshake() }()
				server.SetDeadline(time.Now().Add(10 * time.Second))
				buf, got, err := readHello(server, readSize)
				server.Close()
				if herr := <-done; herr == nil {
					t.Error("the client's handshake succeeded")
				}
				want := c.want
				want.Len = len(buf)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("after %d bytes: %+v, %v; want %+v", len(buf), got, err, want)
				}
				if err := agreeWithGo(got, buf); err != nil || goServerView(buf) == nil {
					t.Fatalf("crypto/tls: %v (refused: %v)", err, goServerView(buf) == nil)
				}
			})
		}
	}
}

// TestCurlHellos: curl's ClientHellos (OpenSSL's, or whatever curl is
// built with), with and without a server name.
func TestCurlHellos(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	for _, c := range []struct {
		name string
		args []string
		want Hello
	}{
		{"SNI, ALPN", []string{"--resolve", fmt.Sprintf("files.example:%d:127.0.0.1", port), fmt.Sprintf("https://files.example:%d/", port)},
			Hello{SNI: true, ServerName: "files.example"}},
		{"SNI, TLS 1.2, HTTP/1.1", []string{"--tls-max", "1.2", "--http1.1", "--resolve", fmt.Sprintf("a.example:%d:127.0.0.1", port), fmt.Sprintf("https://a.example:%d/", port)},
			Hello{SNI: true, ServerName: "a.example", ALPN: []string{"http/1.1"}}},
		{"IP literal: no SNI", []string{fmt.Sprintf("https://127.0.0.1:%d/", port)}, Hello{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, curl, append([]string{"-sS", "-k", "-o", "/dev/null", "--max-time", "5", "--noproxy", "*"}, c.args...)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			conn, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			buf, got, err := readHello(conn, 4096)
			conn.Close()
			if err != nil || got.SNI != c.want.SNI || got.ServerName != c.want.ServerName || got.ECH || got.Len != len(buf) {
				t.Fatalf("after %d bytes: %+v, %v; want %+v", len(buf), got, err, c.want)
			}
			if c.want.ALPN != nil && !slices.Equal(got.ALPN, c.want.ALPN) {
				t.Fatalf("ALPN %q, want %q", got.ALPN, c.want.ALPN)
			}
			if err := agreeWithGo(got, buf); err != nil || goServerView(buf) == nil {
				t.Fatalf("crypto/tls: %v (refused: %v)", err, goServerView(buf) == nil)
			}
			t.Logf("%d bytes, ALPN %q", len(buf), got.ALPN)
		})
	}
}

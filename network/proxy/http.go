package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"time"
)

var errHeadTooLarge = errors.New("request head too large")

// readHead reads an HTTP request head, request line to blank line, of at
// most max bytes. Reading it whole first bounds it exactly, and keeps the
// Host header, which http.ReadRequest drops when the URL is absolute.
func readHead(br *bufio.Reader, max int) ([]byte, error) {
	var head []byte
	start := 0 // of the current line
	for {
		frag, err := br.ReadSlice('\n')
		head = append(head, frag...)
		if len(head) > max {
			return head, errHeadTooLarge
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return head, err
		}
		line := head[start:]
		if start > 0 && (string(line) == "\r\n" || string(line) == "\n") {
			return head, nil
		}
		start = len(head)
	}
}

// hostHeader returns the Host header fields of a head http.ReadRequest
// has accepted.
func hostHeader(head []byte) []string {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(head)))
	if _, err := tp.ReadLine(); err != nil {
		return nil
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil
	}
	return h["Host"]
}

// httpStatus is the status of a refusal.
func httpStatus(reason string) int {
	switch reason {
	case ReasonDNS, ReasonConnect:
		return http.StatusBadGateway
	case ReasonConnLimit:
		return http.StatusTooManyRequests
	case ReasonByteLimit:
		return http.StatusServiceUnavailable
	case ReasonBadRequest:
		return http.StatusBadRequest
	}
	return http.StatusForbidden
}

// refusal is the whole response refusing a request: a status and a
// one-line body naming the reason.
func refusal(status int, reason, host string, port int) []byte {
	body := "tooljail proxy: " + reason + "\n"
	if host != "" {
		body = "tooljail proxy: " + printable(host) + ":" + strconv.Itoa(port) + ": " + reason + "\n"
	}
	retry := ""
	if status == http.StatusTooManyRequests {
		retry = "Retry-After: 1\r\n"
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n%sConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), retry, body)
}

// refuseHTTP answers a refused request and records the refusal.
func (s *session) refuseHTTP(status int, reason string) {
	s.ev.Reason = reason
	s.c.SetWriteDeadline(time.Now().Add(s.p.lim.HeaderTimeout))
	if _, err := s.c.Write(refusal(status, reason, s.ev.Host, s.ev.Port)); err == nil {
		lingerClose(s.c)
	}
}

// hopByHop are the header fields that concern only the connection to the
// proxy (RFC 9110 section 7.6.1), removed before a request goes upstream.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range bytes.Split([]byte(v), []byte(",")) {
			if name = bytes.TrimSpace(name); len(name) > 0 {
				h.Del(string(name))
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

func (s *session) serveHTTP() {
	s.cr.setDeadline(s.ev.Time.Add(s.p.lim.HeaderTimeout))
	br := bufio.NewReader(s.cr)
	head, err := readHead(br, s.p.lim.MaxHeaderBytes)
	switch {
	case err == nil:
	case len(head) == 0 && !isTimeout(err):
		s.silent = true
		return
	case errors.Is(err, errHeadTooLarge):
		s.refuseHTTP(http.StatusRequestHeaderFieldsTooLarge, ReasonBadRequest)
		return
	case isTimeout(err):
		s.refuseHTTP(http.StatusRequestTimeout, ReasonBadRequest)
		return
	default:
		// The client went away mid-head: no one to answer.
		s.ev.Reason = ReasonBadRequest
		return
	}
	// The body, or a tunnel's first bytes, may follow in br.
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(head), br))
	req, err := http.ReadRequest(r)
	if err != nil {
		s.refuseHTTP(http.StatusBadRequest, ReasonBadRequest)
		return
	}
	if req.Method == http.MethodConnect {
		// The tunnel's first bytes may be in r, or in br behind it.
		s.connect(req, buffered(r, br))
		return
	}
	s.plain(req, head)
}

// connect serves CONNECT host:port.
func (s *session) connect(req *http.Request, pending []byte) {
	s.ev.Proto = "connect"
	host, port, ok := splitHostPort(req.RequestURI, 0)
	if !ok {
		s.refuseHTTP(http.StatusBadRequest, ReasonBadRequest)
		return
	}
	t := newTarget(host, port)
	if reason := s.open(t); reason != "" {
		s.refuseHTTP(httpStatus(reason), reason)
		return
	}
	if _, err := s.write(s.c, []byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		s.ev.Reason = ReasonBadRequest
		return
	}
	s.cr.setDeadline(time.Time{})
	s.tunnel(t, pending)
}

// plain serves a request in absolute form: one request, then the
// connection closes.
func (s *session) plain(req *http.Request, head []byte) {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		s.refuseHTTP(http.StatusBadRequest, ReasonBadRequest)
		return
	}
	host, port, ok := splitHostPort(req.URL.Host, 80)
	if !ok {
		s.refuseHTTP(http.StatusBadRequest, ReasonBadRequest)
		return
	}
	t := newTarget(host, port)
	s.ev.Host, s.ev.Port = t.host, t.port
	if h := hostHeader(head); len(h) == 1 && !sameHost(t, h[0]) {
		s.refuseHTTP(http.StatusForbidden, ReasonHostMismatch)
		return
	}
	if reason := s.open(t); reason != "" {
		s.refuseHTTP(httpStatus(reason), reason)
		return
	}
	removeHopByHop(req.Header)
	if _, ok := req.Header["User-Agent"]; !ok {
		// Request.Write would add Go's own.
		req.Header["User-Agent"] = []string{""}
	}
	req.Close = true
	s.cr.setDeadline(time.Time{})
	s.ev.Allowed = true

	w := &upstreamWriter{s: s}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if req.Write(w) != nil {
			s.up.Close()
		}
	}()
	down, downErr := s.relay(s.c, s.up)
	// The response is over: the request is not read further (a body the
	// server did not wait for, or a second request, goes nowhere).
	s.cr.stop()
	s.up.Close()
	<-done
	s.ev.BytesUp, s.ev.BytesDown = w.n, down
	if w.limited || errors.Is(downErr, errByteLimit) {
		s.ev.Reason = ReasonByteLimit
	}
	if downErr == io.EOF {
		lingerClose(s.c)
	}
}

// upstreamWriter sends a request upstream, counted and limited. It
// remembers hitting the limit itself: Request.Write reports a failed body
// copy as a body read error, which does not wrap the cause.
type upstreamWriter struct {
	s       *session
	n       int64
	limited bool
}

func (w *upstreamWriter) Write(b []byte) (int, error) {
	n, err := w.s.send(w.s.up, b)
	w.n += int64(n)
	w.limited = w.limited || errors.Is(err, errByteLimit)
	return n, err
}

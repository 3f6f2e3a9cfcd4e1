package mcpserver

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// The streamable HTTP transport's specification requires a server to
// check Origin on every request, against DNS rebinding: a web page the
// user's browser opened can send requests to a loopback port, and a name
// the page's site controls can be made to resolve to 127.0.0.1. The tools
// run with the server's rights, so a page must never reach them.
//
// guardOrigin refuses with 403, before the SDK's handler sees it:
//   - a request with an Origin header (any method) whose origin is not on
//     loopback: http or https to localhost, 127.0.0.0/8 or [::1], on any
//     port ("null", file: and every other site are refused). Browsers send
//     Origin with every request a page makes with another method than
//     GET or HEAD, and with every cross-origin one that sets a header,
//     which an MCP request does; clients that are programs send none.
//   - on a TCP listener, a request whose Host is not a loopback name or
//     address, with or without a port: after DNS rebinding the browser
//     sends the rebound name. The SDK refuses that too (its localhost
//     protection, on by default); this check does not depend on it.
//
// A unix socket cannot be reached by a browser, and its clients send any
// Host (the SDK's client sends the URL's): there only the Origin rule
// holds, so that a program that forwards a browser's request is refused
// as well.
func guardOrigin(next http.Handler, tcp bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, o := range r.Header.Values("Origin") {
			if !loopbackOrigin(o) {
				http.Error(w, "Forbidden: Origin "+quoteHeader(o)+" is not a loopback origin; tooljail mcp serves programs on this machine, never web pages", http.StatusForbidden)
				return
			}
		}
		if tcp && !loopbackHost(r.Host) {
			http.Error(w, "Forbidden: Host "+quoteHeader(r.Host)+" is not a loopback name or address", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOrigin reports whether o is the serialised origin of a page on
// loopback: scheme "http" or "https", then host and optional port, no
// path, no user.
func loopbackOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil ||
		u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	return loopbackHost(u.Host)
}

// loopbackHost reports whether host ("name", "name:port", "IP", "IP:port",
// "[v6]" or "[v6]:port") names loopback: localhost or an address of
// 127.0.0.0/8 or ::1 (IPv4-mapped too).
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Zone() == "" && ip.Unmap().IsLoopback()
}

// quoteHeader quotes a header value for a refusal, cut short.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "..."
	}
	return strconv.Quote(v)
}

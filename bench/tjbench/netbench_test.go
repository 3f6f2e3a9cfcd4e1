package main

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseCurlW(t *testing.T) {
	got, err := parseCurlW("200 104857600 0.125000\n200 0 0.000512\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []curlSample{{200, 100 << 20, 0.125}, {200, 0, 0.000512}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"", "200 10\n", "200 ten 0.1\n", "<html>\n200 0 0.1\n", "200 0 0.1 extra\n"} {
		if s, err := parseCurlW(bad); err == nil {
			t.Errorf("%q: %v, want an error", bad, s)
		}
	}
}

func TestCheckTransfers(t *testing.T) {
	ok := curlSample{200, 5, 0.1}
	for _, c := range []struct {
		s    []curlSample
		n    int
		good bool
	}{
		{[]curlSample{ok, ok}, 2, true},
		{[]curlSample{ok}, 2, false},
		{[]curlSample{ok, {403, 5, 0.1}}, 2, false}, // refused by the proxy
		{[]curlSample{ok, {200, 4, 0.1}}, 2, false}, // cut short
		{[]curlSample{{200, 5, 0}}, 1, false},       // no time: no rate
		{[]curlSample{{200, 5, math.NaN()}}, 1, false},
	} {
		if err := checkTransfers(c.s, c.n, 5); (err == nil) != c.good {
			t.Errorf("%v, %d transfers: %v; want good %v", c.s, c.n, err, c.good)
		}
	}
}

func TestNetArgv(t *testing.T) {
	for _, c := range []struct {
		variant   string
		want, not []string
	}{
		{"host", []string{"--net host", "--noproxy * "}, []string{"--allow-host", " -x ", " -p "}},
		{"http", []string{"--net allow --allow-host 127.0.0.1:8080 --", "--noproxy  -x " + netProxy + " "}, []string{" -p "}},
		{"connect", []string{"--net allow --allow-host 127.0.0.1:8080 --", "-x " + netProxy + " -p "}, nil},
	} {
		argv := netArgv("tooljail", c.variant, 8080, "http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b")
		line := strings.Join(argv, " ")
		if !strings.HasPrefix(line, "tooljail run -q ") || !strings.HasSuffix(line, " http://127.0.0.1:8080/a http://127.0.0.1:8080/b") {
			t.Errorf("%s: %q", c.variant, line)
		}
		for _, w := range c.want {
			if !strings.Contains(line, w) {
				t.Errorf("%s: %q lacks %q", c.variant, line, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(line, w) {
				t.Errorf("%s: %q has %q", c.variant, line, w)
			}
		}
	}
}

// The server the section downloads from gives what checkTransfers wants.
func TestNetServer(t *testing.T) {
	srv, port, err := netServer()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for path, size := range map[string]int64{"/big": netMiB << 20, "/small": 0} {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != size || resp.StatusCode != 200 || resp.ContentLength != size {
			t.Errorf("%s: %s, %d bytes (Content-Length %d), %v; want 200, %d", path, resp.Status, n, resp.ContentLength, err, size)
		}
		if path == "/small" && !resp.Close {
			t.Errorf("/small keeps the connection: each request must open its own")
		}
	}
}

func netFixture(connect, http, host float64) *netResult {
	n := &netResult{Runs: 3, Requests: 2, Commands: map[string]string{"connect": "tooljail run CONNECT", "http": "tooljail run HTTP", "relay": "tooljail run RELAY", "host": "tooljail run HOST"},
		Download: map[string][]float64{}, SupervisorCPU: map[string][]float64{}, Request: map[string][]float64{}}
	// The bare relay at half of host's rate (when there is one).
	for v, rate := range map[string]float64{"connect": connect, "http": http, "relay": host / 2, "host": host} {
		if rate > 0 {
			n.Download[v] = []float64{rate * 0.5, rate, rate * 2}
			n.SupervisorCPU[v] = []float64{rate / 100, rate / 100, 1}
		}
		n.Request[v] = []float64{1000 / max(rate, 1), 1000 / max(rate, 1)}
	}
	return n
}

func TestNetRow(t *testing.T) {
	for _, c := range []struct {
		connect, host float64
		want, ratio   string
	}{
		{800, 1000, "met", "0.80×"},
		{790, 1000, "**not met**", "0.79×"},
		{0, 1000, "not measured", ""},
	} {
		row := netRow(netFixture(c.connect, 500, c.host))
		if row[3] != c.want || !strings.HasPrefix(row[2], c.ratio) || c.connect > 0 && !strings.Contains(row[2], "a bare relay: 0.50×") {
			t.Errorf("connect %v, host %v: %v; want %q, ratio %s", c.connect, c.host, row, c.want, c.ratio)
		}
	}
}

func TestRenderNet(t *testing.T) {
	var b strings.Builder
	renderNet(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, netFixture(900, 600, 1000))
	out := b.String()
	if !strings.HasPrefix(out, netHeading+"\n") {
		t.Errorf("no heading first:\n%s", out)
	}
	for _, want := range []string{
		"| --net allow, CONNECT tunnel (`curl -p`, as for HTTPS) | 900 MB/s | 540 MB/s | 1620 MB/s | 0.90× | 1.80× | 9.00 ms |",
		"| --net host, through a bare relay (no decisions: any proxy's ceiling) | 500 MB/s | 300 MB/s | 900 MB/s | 0.50× | 1.00× | 5.00 ms (the relay's own CPU is the bench's, not counted) |",
		"| --net host, direct | 1000 MB/s | 600 MB/s | 1800 MB/s | 1.00× | 2.00× | 10.0 ms |",
		"| --net allow, plain HTTP through the proxy | 600 MB/s |",
		"| 0.60× |",
		"| --net host, direct | 1000 MB/s |",
		// 1000/900 ms per request against 1000/1000: 0.111 ms more.
		"| --net allow, CONNECT tunnel (`curl -p`, as for HTTPS) | 1.11 ms | 1.11 ms | 0.111 ms |",
		"| --net host, direct | 1.00 ms | 1.00 ms | — |",
		"    tooljail run CONNECT\n    tooljail run HTTP\n    tooljail run RELAY\n    tooljail run HOST\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}

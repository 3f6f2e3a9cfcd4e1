package main

// The "Network allow mode" section (issue 17, DESIGN.md section 8): a
// 100 MiB download by curl in a jail from a server this process runs on
// the host's loopback, through the allow mode's HTTP proxy (a CONNECT
// tunnel, as for HTTPS, and a plain HTTP request) and with --net host,
// alternated run by run; and the time per request of many small
// requests, each on a new connection, through the proxy and direct. curl
// times each transfer itself (-w), so the jail's start-up does not count.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/bench"
)

const (
	netHeading = "## Network allow mode"
	netTarget  = 0.8 // the proxy's download ÷ --net host's
	netMiB     = 100 // the download's size
	netCurl    = "/usr/bin/curl"
	// netProxy is the allow mode's HTTP proxy inside the jail
	// (docs/network.md). curl is pointed at it explicitly: NO_PROXY names
	// 127.0.0.1, where the bench's server is.
	netProxy = "http://127.0.0.1:3128"
)

// netVariants are the ways to the server, in the section's order.
var netVariants = []struct{ key, label string }{
	{"connect", "--net allow, CONNECT tunnel (`curl -p`, as for HTTPS)"},
	{"http", "--net allow, plain HTTP through the proxy"},
	{"relay", "--net host, through a bare relay (no decisions: any proxy's ceiling)"},
	{"host", "--net host, direct"},
}

// netResult is everything the section reports.
type netResult struct {
	Date     string            `json:"date"`
	Seconds  float64           `json:"seconds"`
	Load     [2]string         `json:"load_before_after"`
	Runs     int               `json:"downloads_each"`
	Requests int               `json:"requests_per_run"`
	Commands map[string]string `json:"commands"` // variant -> the download's command, with PORT for the port
	// Download is MB/s (10^6 bytes per second) per download, by variant.
	Download map[string][]float64 `json:"download_mb_per_s"`
	// SupervisorCPU is the CPU time of tooljail's own process per
	// download run, in ms, start and teardown included, by variant.
	SupervisorCPU map[string][]float64 `json:"supervisor_cpu_ms_per_download_run"`
	// Request is ms per small request on a new connection, by variant.
	Request map[string][]float64 `json:"request_ms"`
}

// curlSample is one transfer as curl's -w netCurlW reports it.
type curlSample struct {
	Code  int
	Size  int64
	Total float64 // seconds, from the start of the transfer to its end
}

const netCurlW = `%{http_code} %{size_download} %{time_total}\n`

// parseCurlW reads the lines -w netCurlW printed, one per transfer,
// ignoring nothing: any other line is an error (a body on stdout would be
// one).
func parseCurlW(out string) ([]curlSample, error) {
	var s []curlSample
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("curl -w: %q is not \"code size seconds\"", line)
		}
		code, err1 := strconv.Atoi(f[0])
		size, err2 := strconv.ParseInt(f[1], 10, 64)
		total, err3 := strconv.ParseFloat(f[2], 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("curl -w: %q: %w", line, err)
		}
		s = append(s, curlSample{code, size, total})
	}
	return s, nil
}

// checkTransfers checks that there are n transfers, each a 200 of size
// bytes in a positive time.
func checkTransfers(s []curlSample, n int, size int64) error {
	if len(s) != n {
		return fmt.Errorf("%d transfers, want %d", len(s), n)
	}
	for i, x := range s {
		if x.Code != http.StatusOK || x.Size != size || !(x.Total > 0) {
			return fmt.Errorf("transfer %d: status %d, %d bytes in %g s; want 200, %d bytes", i+1, x.Code, x.Size, x.Total, size)
		}
	}
	return nil
}

// netArgv is the command of one variant: curl fetching urls, in a jail
// whose network reaches the server at port.
func netArgv(tooljail, variant string, port int, urls ...string) []string {
	argv := []string{tooljail, "run", "-q"}
	curl := []string{netCurl, "-sS", "-o", "/dev/null", "-w", netCurlW}
	switch variant {
	case "host", "relay":
		argv = append(argv, "--net", "host")
		curl = append(curl, "--noproxy", "*")
	default:
		argv = append(argv, "--net", "allow", "--allow-host", fmt.Sprintf("127.0.0.1:%d", port))
		curl = append(curl, "--noproxy", "", "-x", netProxy)
		if variant == "connect" {
			curl = append(curl, "-p")
		}
	}
	argv = append(argv, "--")
	argv = append(argv, curl...)
	return append(argv, urls...)
}

// netRelay listens on the host's loopback and relays each connection to
// port, both ways, as the allow mode's proxy does once it has decided
// (io.Copy between two *net.TCPConn: splice(2)), with nothing else: what
// any user-space proxy costs at least. It ends when l is closed.
func netRelay(port int) (net.Listener, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					io.Copy(up, c)
					up.(*net.TCPConn).CloseWrite()
				}()
				io.Copy(c, up)
			}()
		}
	}()
	return l, l.Addr().(*net.TCPAddr).Port, nil
}

// netServer serves /big (netMiB MiB) and /small (an empty body, and the
// connection closed after it) on the host's loopback.
func netServer() (*http.Server, int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(netMiB<<20))
		for range netMiB {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.Header().Set("Content-Length", "0")
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	return srv, l.Addr().(*net.TCPAddr).Port, nil
}

// runCurl runs argv and returns curl's transfers, checked, and with
// sample the CPU time of tooljail's own process (the supervisor, every
// thread; not the jail's processes) in ms, sampled every millisecond until
// it exits. Sampling takes CPU from the download on a busy host, so the
// bench samples in runs of their own, whose rates it does not keep.
func runCurl(argv []string, wd string, n int, size int64, sample bool) ([]curlSample, float64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = wd
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	var cpu int64
	procDir := -1
	if sample {
		procDir, _ = unix.Open("/proc/"+strconv.Itoa(cmd.Process.Pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	if procDir >= 0 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				c, err := processCPU(procDir)
				if err != nil || c == 0 {
					return // gone
				}
				// The largest sample: as the process ends, its threads
				// go, and what is left reads less.
				cpu = max(cpu, c)
				time.Sleep(time.Millisecond)
			}
		}()
		err := cmd.Wait()
		<-done
		unix.Close(procDir)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w: %s", shellJoin(argv), err, strings.TrimSpace(stderr.String()))
		}
	} else if err := cmd.Wait(); err != nil {
		return nil, 0, fmt.Errorf("%s: %w: %s", shellJoin(argv), err, strings.TrimSpace(stderr.String()))
	}
	s, err := parseCurlW(stdout.String())
	if err == nil {
		err = checkTransfers(s, n, size)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", shellJoin(argv), err)
	}
	return s, float64(cpu) / 1e6, nil
}

// netBench measures the section: runs downloads per variant, and runs
// jail runs of requests small requests per variant, all alternated with
// the order rotated round by round.
func netBench(tooljail, wd string, runs, requests int) (*netResult, error) {
	began := time.Now()
	if _, err := os.Stat(netCurl); err != nil {
		return nil, fmt.Errorf("the network section runs curl in the jail: %w (install curl, or skip the section: BENCH_NET_RUNS=0)", err)
	}
	srv, port, err := netServer()
	if err != nil {
		return nil, err
	}
	defer srv.Shutdown(context.Background())
	rl, relayPort, err := netRelay(port)
	if err != nil {
		return nil, err
	}
	defer rl.Close()
	ns := netSite{tooljail: tooljail, wd: wd, port: port, relayPort: relayPort, requests: requests}
	res := &netResult{Date: began.UTC().Format(time.RFC3339), Runs: runs, Requests: requests, Load: [2]string{loadAvg()},
		Commands: map[string]string{}, Download: map[string][]float64{}, SupervisorCPU: map[string][]float64{}, Request: map[string][]float64{}}
	for _, v := range netVariants {
		cmd := shellJoin(ns.download(v.key))
		cmd = strings.ReplaceAll(cmd, strconv.Itoa(relayPort), "RELAYPORT")
		res.Commands[v.key] = strings.ReplaceAll(cmd, strconv.Itoa(port), "PORT")
		// A warm-up run each, which also checks the way works.
		if _, _, err := runCurl(ns.download(v.key), wd, 1, netMiB<<20, false); err != nil {
			return nil, err
		}
	}
	step("network: %d x %d MiB downloads and %d runs of %d requests per variant, alternating", runs, netMiB, runs, requests)
	for r := 0; r < runs; r++ {
		if err := ns.round(res, r); err != nil {
			return nil, err
		}
	}
	res.Load[1] = loadAvg()
	res.Seconds = time.Since(began).Seconds()
	return res, nil
}

// netSite is where the network section's curl runs go: the local server's
// port, and the bare relay's in front of it.
type netSite struct {
	tooljail, wd    string
	port, relayPort int
	requests        int // small requests per run
}

// base is the URL the variant fetches from: the relay's for "relay", the
// server's for the others.
func (n netSite) base(variant string) string {
	if variant == "relay" {
		return fmt.Sprintf("http://127.0.0.1:%d", n.relayPort)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", n.port)
}

// download is the variant's argv of one big download.
func (n netSite) download(variant string) []string {
	return netArgv(n.tooljail, variant, n.port, n.base(variant)+"/big")
}

// small is the variant's argv of n.requests small requests.
func (n netSite) small(variant string) []string {
	urls := make([]string, n.requests)
	for i := range urls {
		urls[i] = n.base(variant) + "/small"
	}
	return netArgv(n.tooljail, variant, n.port, urls...)
}

// round is round r of the section: a download each way for the rate, one
// each for the supervisor's CPU, and a run of small requests each, every
// pass starting one variant further along.
func (n netSite) round(res *netResult, r int) error {
	order := func(k int) string { return netVariants[(r+k)%len(netVariants)].key }
	for k := range netVariants {
		v := order(k)
		s, _, err := runCurl(n.download(v), n.wd, 1, netMiB<<20, false)
		if err != nil {
			return err
		}
		res.Download[v] = append(res.Download[v], float64(s[0].Size)/s[0].Total/1e6)
	}
	for k := range netVariants {
		v := order(k)
		_, cpu, err := runCurl(n.download(v), n.wd, 1, netMiB<<20, true)
		if err != nil {
			return err
		}
		res.SupervisorCPU[v] = append(res.SupervisorCPU[v], cpu)
	}
	for k := range netVariants {
		v := order(k)
		s, _, err := runCurl(n.small(v), n.wd, n.requests, 0, false)
		if err != nil {
			return err
		}
		for _, x := range s {
			res.Request[v] = append(res.Request[v], x.Total*1000)
		}
	}
	return nil
}

// netRatio is a variant's median download rate ÷ --net host's.
func (n *netResult) netRatio(variant string) float64 {
	return bench.Ratio(bench.Median(n.Download[variant]), bench.Median(n.Download["host"]))
}

// netRow is the targets row: the CONNECT tunnel, the way HTTPS goes.
func netRow(n *netResult) []string {
	ratio := n.netRatio("connect")
	met := "not measured"
	switch {
	case math.IsNaN(ratio):
	case ratio >= netTarget:
		met = "met"
	default:
		met = "**not met**"
	}
	return []string{fmt.Sprintf("network allow mode: a %d MiB download through the proxy (CONNECT) ÷ --net host, medians of %d", netMiB, n.Runs),
		fmt.Sprintf("≥ %.2f×", netTarget),
		fmt.Sprintf("%s (%s vs %s; a bare relay: %s, the proxy ÷ it: %s)", bench.FormatRatio(bench.Median(n.Download["connect"]), bench.Median(n.Download["host"])),
			mbText(bench.Median(n.Download["connect"])), mbText(bench.Median(n.Download["host"])),
			bench.FormatRatio(bench.Median(n.Download["relay"]), bench.Median(n.Download["host"])),
			bench.FormatRatio(bench.Median(n.Download["connect"]), bench.Median(n.Download["relay"]))), met}
}

func mbText(mbps float64) string {
	if math.IsNaN(mbps) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f MB/s", mbps)
}

// renderNet writes the "Network allow mode" section.
func renderNet(p func(string, ...any), n *netResult) {
	p("%s\n\n", netHeading)
	hostMB, hostMs := bench.Median(n.Download["host"]), bench.Median(n.Request["host"])
	relayMB := bench.Median(n.Download["relay"])
	var dl, rq [][]string
	for _, v := range netVariants {
		d, q := n.Download[v.key], n.Request[v.key]
		cpu := bench.FormatMs(bench.Median(n.SupervisorCPU[v.key]))
		if v.key == "relay" {
			cpu += " (the relay's own CPU is the bench's, not counted)"
		}
		dl = append(dl, []string{v.label, mbText(bench.Median(d)), mbText(bench.Percentile(d, 10)), mbText(bench.Percentile(d, 90)),
			bench.FormatRatio(bench.Median(d), hostMB), bench.FormatRatio(bench.Median(d), relayMB), cpu})
		beyond := "—"
		if v.key != "host" {
			beyond = bench.FormatMs(bench.Median(q) - hostMs)
		}
		rq = append(rq, []string{v.label, bench.FormatMs(bench.Median(q)), bench.FormatMs(bench.Percentile(q, 90)), beyond})
	}
	p("A %d MiB download, %d per variant (MB/s: 10⁶ bytes per second; ÷ host is of the medians; target ≥ %.2f×):\n\n", netMiB, n.Runs, netTarget)
	p("%s\n", bench.Table([]string{"way", "median", "p10", "p90", "÷ --net host", "÷ bare relay", "supervisor CPU per run"}, dl))
	p("The bare relay is this bench's own: for each connection, a connection to the server and `io.Copy`\n")
	p("both ways between the two (splice(2)), with no decision, no limit and no jail, on the host's loopback.\n")
	p("It is what a proxy in user space costs at least, measured in the same run: a byte crosses a second\n")
	p("loopback TCP connection and a process that moves it. Where the bare relay is far below --net host (a\n")
	p("quiet machine with few cores), no proxy can reach the target; ÷ bare relay is then how close the allow\n")
	p("mode's proxy comes to that ceiling.\n\n")
	p("The supervisor's CPU time is its own process's (every thread, from `/proc/<pid>/task/*/schedstat`,\n")
	p("sampled every millisecond until it exits; not the jail's processes), median per download run, the\n")
	p("jail's start and teardown included, from runs of their own: sampling takes CPU from the transfer,\n")
	p("so the rates above come from runs that are not sampled. Beyond --net host's it is what the proxy\n")
	p("spends on %d MiB, and it is spent outside the jail's CPU cap. It depends less on the machine's load\n", netMiB)
	p("than the rates do.\n\n")
	p("A request on a new connection (an empty response, `Connection: close`), %d per run, %d runs per variant:\n\n", n.Requests, n.Runs)
	p("%s\n", bench.Table([]string{"way", "median", "p90", "set-up beyond --net host"}, rq))
	p("curl runs in a default-profile jail and times each transfer itself (`-w '%%{time_total}'`), so the\n")
	p("jail's start-up does not count; the server is this bench's own, on the host's loopback. The variants\n")
	p("alternate run by run, the order rotated. Through the proxy a byte crosses two loopback TCP connections\n")
	p("(the jail's to the supervisor, the supervisor's to the server) and the supervisor moves it between them\n")
	p("with splice(2); on loopback the second connection's kernel work competes with curl and the server for\n")
	p("the same cores. A request through the proxy adds the proxy's accept, its decision, its own connection to\n")
	p("the server and, for CONNECT, one more round trip. The download's commands (PORT: the server's port,\n")
	p("RELAYPORT the bare relay's; the requests' are the same with %d URLs of /small):\n\n", n.Requests)
	for _, v := range netVariants {
		p("    %s\n", n.Commands[v.key])
	}
	p("\n")
	p("Measured %s in %.0f s (`tjbench -only net` measures this section alone); load average\n", n.Date, n.Seconds)
	p("before / after: %s / %s.\n\n", n.Load[0], n.Load[1])
}

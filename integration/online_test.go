package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The online workloads: real downloads from the registries this machine
// reaches, through the network allow mode of the `fetch` profile. They run
// only under `make test-online` (TOOLJAIL_TEST_ONLINE=1), never in `make
// test`, and skip with the reason when the registry cannot be reached.
//
// The registry comes from the tool's own configuration (`npm config get
// registry`, `go env GOPROXY`), never from this file. Where the machine
// resolves it to a reserved range (DESIGN.md section 9: the registries here
// do), the allow mode refuses it by name alone, which is right in general:
// the test allows its addresses by IP as well, for its port.

// onlineOnly skips unless TOOLJAIL_TEST_ONLINE=1 (make test-online).
func onlineOnly(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if os.Getenv("TOOLJAIL_TEST_ONLINE") != "1" {
		t.Skip("an online test: `make test-online` runs it (TOOLJAIL_TEST_ONLINE=1)")
	}
}

// hostOutput runs a host tool and returns its trimmed output, or skips.
func hostOutput(t *testing.T, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed on this machine", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		t.Skipf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// registry is a registry's URL as its tool is configured, and what the
// allow mode needs for it: its name and every address it resolves to here,
// each with the port.
type registry struct {
	url   *url.URL
	host  string
	port  string
	addrs []string
}

// reachRegistry parses raw, resolves it and fetches probe (a path below
// it) from the host; it skips, saying why, when the registry cannot be
// reached from this machine.
func reachRegistry(t *testing.T, what, raw, probe string) registry {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		t.Skipf("%s %q: not an http(s) URL this test can fetch through the allow mode", what, raw)
	}
	r := registry{url: u, host: u.Hostname(), port: u.Port()}
	if r.port == "" {
		r.port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupIPAddr(ctx, r.host)
	if err != nil || len(ips) == 0 {
		t.Skipf("%s %s cannot be reached from this machine: %v", what, raw, err)
	}
	for _, ip := range ips {
		r.addrs = append(r.addrs, ip.IP.String())
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(raw, "/")+probe, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("%s %s cannot be reached from this machine: %v", what, raw, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Skipf("%s %s: %s answered %s", what, raw, probe, resp.Status)
	}
	t.Logf("%s: %s (%s, addresses %s)", what, raw, r.host, strings.Join(r.addrs, ", "))
	return r
}

// allowFlags allow r by name and by each of its addresses, for its port.
func (r registry) allowFlags() []string {
	flags := []string{"--allow-host", net.JoinHostPort(r.host, r.port)}
	for _, a := range r.addrs {
		flags = append(flags, "--allow-host", net.JoinHostPort(a, r.port))
	}
	return flags
}

// checkNetwork fails unless the report shows an allowed connection to
// host that brought bytes back, and no refusal.
func checkNetwork(t *testing.T, f figures, o *outcome, host string) {
	t.Helper()
	found := false
	for _, n := range f.Network {
		if n.Proto == "dns" {
			continue
		}
		if n.Decision != "allowed" {
			t.Errorf("a connection was refused: %+v\n%s", n, o)
		}
		if n.Host == host && n.Decision == "allowed" && n.BytesDown > 0 {
			found = true
			t.Logf("allowed: %s %s:%d (%s), %d bytes up, %d down, %d connection(s)", n.Proto, n.Host, n.Port, n.Address, n.BytesUp, n.BytesDown, n.Count)
		}
	}
	if !found {
		t.Errorf("the report shows no allowed connection to %s that brought bytes: %+v\n%s", host, f.Network, o)
	}
}

// npm install of a small package from the registry npm is configured
// with, through the allow mode of the fetch profile; node then requires it.
func TestOnlineNpmInstall(t *testing.T) {
	onlineOnly(t)
	t.Parallel()
	node := hostTool(t, "/usr/bin/node", "/usr/local/bin/node")
	npm := hostTool(t, "/usr/bin/npm", "/usr/local/bin/npm")
	reg := reachRegistry(t, "npm registry", hostOutput(t, "npm", "config", "get", "registry"), "/is-number")
	forUsers(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		writeOwned(t, u, filepath.Join(w, "package.json"), `{"name": "tj-online", "version": "1.0.0", "private": true}`+"\n")
		args := append([]string{"--profile", "fetch", "--env", "npm_config_registry=" + reg.url.String()}, reg.allowFlags()...)
		o := u.jailRun(t, w, run{args: args, timeout: 5 * time.Minute}, npm, "install", "--no-audit", "is-number@7.0.0")
		workloadOK(t, o)
		f := workloadFigures(t, "npm install is-number", o)
		checkNetwork(t, f, o, reg.host)
		b, err := os.ReadFile(filepath.Join(w, "node_modules", "is-number", "package.json"))
		if err != nil || !strings.Contains(string(b), `"version": "7.0.0"`) {
			t.Fatalf("node_modules/is-number/package.json: %v %.200q\n%s", err, b, o)
		}
		o = u.jailRun(t, w, run{args: []string{"--profile", "node"}}, node, "-e", `const n = require("is-number"); console.log(n(5), n("x"))`)
		workloadOK(t, o)
		if o.stdout != "true false\n" {
			t.Errorf("the installed package: %q, want \"true false\\n\"\n%s", o.stdout, o)
		}
	})
}

const goModMain = `package main

import (
	"fmt"

	"github.com/google/uuid"
)

func main() {
	u := uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://example.com/tooljail"))
	fmt.Println("uuid", u.Version(), len(u.String()))
}
`

// go mod tidy (downloading) and go build of a module with one dependency, from the
// module proxy `go env GOPROXY` names, through the allow mode of the fetch
// profile, with a fresh module and build cache in the workdir. Checksums
// are verified against the database `go env GOSUMDB` names: the go command
// asks the proxy first whether it serves that database
// (PROXY/sumdb/NAME/supported) and then reaches it through the proxy, else
// directly, so the test allows the database's host too where it resolves.
func TestOnlineGoBuild(t *testing.T) {
	onlineOnly(t)
	t.Parallel()
	goroot := hostOutput(t, "go", "env", "GOROOT")
	goBin := filepath.Join(goroot, "bin", "go")
	proxy, _, _ := strings.Cut(hostOutput(t, "go", "env", "GOPROXY"), ",")
	proxy, _, _ = strings.Cut(proxy, "|")
	if proxy == "direct" || proxy == "off" || proxy == "" {
		t.Skipf("GOPROXY starts with %q: this test downloads through a module proxy", proxy)
	}
	reg := reachRegistry(t, "Go module proxy", proxy, "/github.com/google/uuid/@v/list")
	sumdb := hostOutput(t, "go", "env", "GOSUMDB")
	allow := reg.allowFlags()
	if name := strings.Fields(sumdb + " ")[0]; sumdb != "off" && name != "" {
		host := strings.TrimPrefix(strings.TrimPrefix(name, "https://"), "http://")
		if ips, err := net.LookupHost(host); err == nil {
			allow = append(allow, "--allow-host", net.JoinHostPort(host, "443"))
			for _, a := range ips {
				allow = append(allow, "--allow-host", net.JoinHostPort(a, "443"))
			}
		}
	}
	forUsers(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		writeOwned(t, u, filepath.Join(w, "main.go"), goModMain)
		writeOwned(t, u, filepath.Join(w, "go.mod"), "module example.com/tjonline\n\ngo 1.21\n\nrequire github.com/google/uuid v1.6.0\n")
		args := []string{"--profile", "fetch"}
		if !shownBySystem(goroot) {
			// The GOROOT must be executable in the jail: shown as a
			// toolchain, as the `go` profile finds it.
			args = append(args, "--toolchain", goroot)
		}
		args = append(args,
			"--env", "GOPROXY="+reg.url.String(), "--env", "GOSUMDB="+sumdb,
			"--env", "GOMODCACHE="+filepath.Join(w, ".cache", "mod"), "--env", "GOCACHE="+filepath.Join(w, ".cache", "build"),
			"--env", "GOFLAGS=-modcacherw", "--env", "GOTOOLCHAIN=local", "--env", "CGO_ENABLED=0")
		args = append(args, allow...)
		o := u.jailRun(t, w, run{args: args, timeout: 10 * time.Minute}, "/bin/sh", "-c", goBin+" mod tidy -x && "+goBin+" build -o tjonline . && ./tjonline")
		workloadOK(t, o)
		f := workloadFigures(t, "go mod tidy and go build with a fresh cache", o)
		checkNetwork(t, f, o, reg.host)
		if o.stdout != "uuid VERSION_5 36\n" {
			t.Errorf("the program built: %q, want \"uuid VERSION_5 36\\n\"\n%s", o.stdout, o)
		}
		if sumdb != "off" && !strings.Contains(o.stderr, "/sumdb/"+strings.Fields(sumdb)[0]+"/") && !strings.Contains(string(o.reportRaw), strings.Fields(sumdb)[0]) {
			t.Errorf("no checksum database %s was consulted (neither through the proxy nor directly)\n%s", sumdb, o)
		}
		if b, err := os.ReadFile(filepath.Join(w, "go.sum")); err != nil || !strings.Contains(string(b), "github.com/google/uuid v1.6.0 h1:") {
			t.Errorf("go.sum: %v %q", err, b)
		}
	})
}

// shownBySystem says whether dir lies in one of the default profile's
// system directories, which the jail shows with execute rights.
func shownBySystem(dir string) bool {
	for _, s := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
		if dir == s || strings.HasPrefix(dir, s+"/") {
			return true
		}
	}
	return false
}

// pip download of a small package from the index pip is configured with
// (PIP_INDEX_URL, else pip's configuration, else its default), through the
// allow mode of the network profile; the index's file host is allowed as
// the index links to it.
func TestOnlineNetworkPipDownload(t *testing.T) {
	onlineOnly(t)
	t.Parallel()
	py := hostTool(t, "/usr/bin/python3")
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("%s has no pip (Debian's python3-pip): %v", py, err)
	}
	index := os.Getenv("PIP_INDEX_URL")
	if index == "" {
		if out, err := exec.Command(py, "-m", "pip", "config", "get", "global.index-url").Output(); err == nil {
			index = strings.TrimSpace(string(out))
		}
	}
	if index == "" {
		index = "https://pypi.org/simple" // pip's own default
	}
	reg := reachRegistry(t, "Python package index", index, "/six/")
	allow := reg.allowFlags()
	files := indexFileHost(t, strings.TrimSuffix(index, "/")+"/six/")
	if files.host != reg.host {
		allow = append(allow, files.allowFlags()...)
	}
	forUsers(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		args := append([]string{"--profile", "network", "--env", "PIP_INDEX_URL=" + index}, allow...)
		o := u.jailRun(t, w, run{args: args, timeout: 5 * time.Minute}, py, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "-d", ".", "six")
		workloadOK(t, o)
		f := workloadFigures(t, "pip download six", o)
		checkNetwork(t, f, o, reg.host)
		if m, _ := filepath.Glob(filepath.Join(w, "six-*")); len(m) != 1 {
			t.Errorf("pip left %q in the workdir, want one six-* file\n%s", m, o)
		}
	})
}

// indexFileHost is the host (and its addresses) the first link of a
// simple-index page points to: where pip downloads the files from.
func indexFileHost(t *testing.T, page string) registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Skipf("%s: %v", page, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	m := regexp.MustCompile(`href="([^"#]+)`).FindSubmatch(b)
	if m == nil {
		t.Skipf("%s links to no file", page)
	}
	base, _ := url.Parse(page)
	link, err := base.Parse(string(m[1]))
	if err != nil {
		t.Skipf("%s: link %q: %v", page, m[1], err)
	}
	return reachRegistry(t, "package files", link.Scheme+"://"+link.Host, link.EscapedPath())
}

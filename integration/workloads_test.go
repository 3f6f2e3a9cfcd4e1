package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The shipped workload profiles (build, readonly, node; fetch in
// online_test.go) each run a real workload of their kind with the host's own
// tools: the test writes a small project into the workdir, runs the tool in
// the jail, and checks the result on the host. Each logs the workload's
// memory peak and wall time from the report (docs/profiles.md quotes them);
// nothing here asserts a time. The VM guests have no gcc, make, node or
// grep: those parts skip there and say so.

// figures is what the workload tests read from the report beyond the
// common fields.
type figures struct {
	MemoryPeak *int64 `json:"memory_peak_bytes"`
	WallTimeMs *int64 `json:"wall_time_ms"`
	PidsPeak   *int64 `json:"pids_peak"`
	Network    []struct {
		Proto     string `json:"proto"`
		Host      string `json:"host"`
		Port      int    `json:"port"`
		Address   string `json:"address"`
		BytesUp   int64  `json:"bytes_up"`
		BytesDown int64  `json:"bytes_down"`
		Decision  string `json:"decision"`
		Count     int    `json:"count"`
	} `json:"network"`
}

// workloadFigures parses o's report and logs the workload's memory peak,
// wall time and process peak (absent where this user has no cgroup caps).
func workloadFigures(t *testing.T, what string, o *outcome) figures {
	t.Helper()
	var f figures
	if err := json.Unmarshal(o.reportRaw, &f); err != nil {
		t.Fatalf("report: %v\n%s", err, o)
	}
	mem, pids := "not measured", "not measured"
	if f.MemoryPeak != nil {
		mem = fmt.Sprintf("%.1f MiB", float64(*f.MemoryPeak)/(1<<20))
	}
	if f.PidsPeak != nil {
		pids = fmt.Sprint(*f.PidsPeak)
	}
	wall := "not measured"
	if f.WallTimeMs != nil {
		wall = (time.Duration(*f.WallTimeMs) * time.Millisecond).String()
	}
	t.Logf("workload %s (profile %s): memory peak %s, wall time %s, pids peak %s", what, o.report.Profile, mem, wall, pids)
	return f
}

// ok checks a workload's run: exit 0, status exited, no violation.
func workloadOK(t *testing.T, o *outcome) {
	t.Helper()
	if o.code != 0 || o.noReport || o.report.Status != "exited" || o.report.ExitCode != 0 {
		t.Fatalf("want exit 0, status exited\n%s", o)
	}
	if len(o.report.Violations) != 0 {
		t.Errorf("violations: %+v\n%s", o.report.Violations, o)
	}
}

// A C project of two files and a header, as an agent's `make` meets it.
var cProject = map[string]string{
	"util.h": "#ifndef UTIL_H\n#define UTIL_H\nint scale(int a, int b);\n#endif\n",
	"util.c": "#include \"util.h\"\nint scale(int a, int b) { return a * b + 2; }\n",
	"main.c": "#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"built %d\\n\", scale(8, 5)); return 0; }\n",
	"Makefile": "CC ?= cc\nCFLAGS ?= -O2 -Wall -Werror\n\n" +
		"hello: main.o util.o\n\t$(CC) $(CFLAGS) -o $@ main.o util.o\n\n" +
		"%.o: %.c util.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n" +
		".PHONY: clean\nclean:\n\trm -f hello *.o\n",
}

// build: make (two jobs) compiles and links the project with the host's
// gcc; the binary it built runs, in a second jail.
func TestWorkloadBuild(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		makeBin := hostTool(t, "/usr/bin/make", "/bin/make")
		hostTool(t, "/usr/bin/cc", "/usr/bin/gcc")
		w := u.workdir(t)
		for name, text := range cProject {
			writeOwned(t, u, filepath.Join(w, name), text)
		}
		o := u.jailRun(t, w, run{args: []string{"--profile", "build"}}, makeBin, "-j2")
		workloadOK(t, o)
		workloadFigures(t, "make -j2 of a C project", o)
		if lim := o.report.Limits; lim.MemoryBytes != 2<<30 || lim.Pids != 1024 || lim.CPUs != 2 || lim.TimeoutMs != 30*60*1000 || lim.NoFile != 4096 {
			t.Errorf("limits %+v: not the build profile's\n%s", lim, o)
		}
		for _, f := range []string{"main.o", "util.o", "hello"} {
			if _, err := os.Stat(filepath.Join(w, f)); err != nil {
				t.Errorf("make left no %s: %v\n%s", f, err, o)
			}
		}
		o = u.jailRun(t, w, run{}, "./hello")
		workloadOK(t, o)
		if o.stdout != "built 42\n" {
			t.Errorf("the built program printed %q, want \"built 42\\n\"\n%s", o.stdout, o)
		}
	})
}

// readonly: the workdir can be searched and read, and nothing in it can be
// written, created, removed, renamed or have its mode changed (EROFS); the
// host file is as it was. The helper runs from the workdir: the test
// directories lie under /tmp, whose Landlock rule in the jail reaches them,
// so it may be executed here (outside /tmp a read-only workdir is not
// executable).
func TestWorkloadReadonly(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w := u.workdir(t)
		mark := marker("readonly")
		notes := filepath.Join(w, "src", "notes.txt")
		if err := os.Mkdir(filepath.Join(w, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(w, "src"), u.dirUID, u.dirGID)
		text := "first line\nthe " + mark + " is here\n"
		writeOwned(t, u, notes, text)
		before, err := os.Stat(notes)
		if err != nil {
			t.Fatal(err)
		}

		o := u.jail(t, w, []string{"--profile", "readonly"},
			"read", notes, ";",
			"mountro", w, ";",
			"write", notes, "10", ";",
			"write", filepath.Join(w, "new.txt"), "10", ";",
			"mkdir", filepath.Join(w, "newdir"), ";",
			"rename", notes, filepath.Join(w, "src", "moved.txt"), ";",
			"remove", notes, ";",
			"chmod", notes, "0666",
		)
		l := o.ok(t, 8)
		var read, mount string
		o.value(t, 0, &read)
		o.value(t, 1, &mount)
		if read != text {
			t.Errorf("reading the workdir: %q, want %q\n%s", read, text, o)
		}
		if mount != "ro" {
			t.Errorf("the workdir's mount is %q, want ro\n%s", mount, o)
		}
		for i, what := range []string{"write a file", "create a file", "make a directory", "rename", "remove", "chmod"} {
			if line := l[2+i]; line != "errno EROFS" {
				t.Errorf("%s in the read-only workdir: %q, want errno EROFS\n%s", what, line, o)
			}
		}
		if len(o.report.Enforcement.Protected) != 0 {
			t.Errorf("protected paths in a read-only workdir: %q (nothing there is writable to protect)", o.report.Enforcement.Protected)
		}
		after, err := os.Stat(notes)
		if err != nil {
			t.Fatalf("the host file is gone: %v", err)
		}
		if got, _ := os.ReadFile(notes); string(got) != text || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			t.Errorf("the host file changed: %q, mode %v (was %v), mtime %v (was %v)", got, after.Mode(), before.Mode(), after.ModTime(), before.ModTime())
		}
		for _, f := range []string{"new.txt", "newdir", "src/moved.txt"} {
			if _, err := os.Lstat(filepath.Join(w, f)); err == nil {
				t.Errorf("%s was created on the host", f)
			}
		}

		// The workload: grep -r (and rg where installed) finds the line.
		for _, tool := range []struct {
			name  string
			paths []string
			args  []string
		}{
			{"grep", []string{"/usr/bin/grep", "/bin/grep"}, []string{"-rn", mark, "."}},
			{"rg", []string{"/usr/bin/rg", "/usr/local/bin/rg"}, []string{"-n", "--no-heading", mark, "."}},
		} {
			t.Run(tool.name, func(t *testing.T) {
				bin := hostTool(t, tool.paths...)
				o := u.jailRun(t, w, run{args: []string{"--profile", "readonly"}}, append([]string{bin}, tool.args...)...)
				workloadOK(t, o)
				workloadFigures(t, tool.name+" in a read-only workdir", o)
				if want := "./src/notes.txt:2:the " + mark + " is here\n"; o.stdout != want {
					t.Errorf("%s found %q, want %q\n%s", tool.name, o.stdout, want, o)
				}
			})
		}
	})
}

// readonly is refused where a read-write workdir is: a read-only $HOME or
// / would show the caller's keys and every other secret.
func TestWorkloadReadonlyRefusesHome(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		var degraded []string
		for _, d := range u.degraded {
			degraded = append(degraded, "--allow-degraded", d)
		}
		for _, c := range []struct {
			flags []string
			want  []string
		}{
			{[]string{"--profile", "readonly", "--workdir", "/"}, []string{"workdir /: the host's root cannot be the workdir"}},
			{[]string{"--profile", "readonly", "--workdir", "/etc"}, []string{"workdir /etc: refusing it as the workdir, even read-only", "system directory"}},
			{[]string{"--workdir-ro", "--workdir", "/root"}, []string{"workdir /root: refusing it as the workdir, even read-only", "top-level directory"}},
		} {
			args := append(append(append([]string{"run"}, degraded...), c.flags...), "--", "/nonexistent")
			oneLineError(t, u.exec(t, run{args: args}), c.want...)
		}
	})
}

var versionLine = regexp.MustCompile(`^\d+\.\d+\.\d+$`)

// node: node runs a script, npm and npx start and answer offline, with
// npm's calls home switched off by the profile.
func TestWorkloadNode(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		node := hostTool(t, "/usr/bin/node", "/usr/local/bin/node")
		npm := hostTool(t, "/usr/bin/npm", "/usr/local/bin/npm")
		npx := hostTool(t, "/usr/bin/npx", "/usr/local/bin/npx")
		w := u.workdir(t)
		writeOwned(t, u, filepath.Join(w, "package.json"), `{"name": "tj-node", "version": "1.0.0", "private": true}`+"\n")
		script := `const os = require("os"); const fs = require("fs");
fs.writeFileSync("out.json", JSON.stringify({sum: [1, 2, 3].reduce((a, b) => a + b), pkg: require("./package.json").name}));
console.log("node", process.versions.node.split(".")[0] > 0, process.env.NPM_CONFIG_UPDATE_NOTIFIER, os.homedir());`
		o := u.jailRun(t, w, run{args: []string{"--profile", "node"}}, node, "-e", script)
		workloadOK(t, o)
		workloadFigures(t, "node -e", o)
		if o.stdout != "node true false /home/sandbox\n" {
			t.Errorf("node printed %q\n%s", o.stdout, o)
		}
		if b, _ := os.ReadFile(filepath.Join(w, "out.json")); string(b) != `{"sum":6,"pkg":"tj-node"}` {
			t.Errorf("node wrote %q to the workdir", b)
		}
		for _, c := range [][]string{{npm, "--version"}, {npx, "--version"}} {
			o := u.jailRun(t, w, run{args: []string{"--profile", "node"}}, c...)
			workloadOK(t, o)
			workloadFigures(t, filepath.Base(c[0])+" --version", o)
			if !versionLine.MatchString(strings.TrimSpace(o.stdout)) {
				t.Errorf("%s --version printed %q\n%s", c[0], o.stdout, o)
			}
		}
	})
}

// A server serving readonly runs each call with the workdir read-only, a
// warm jail as a cold one: reading works, writing fails with EROFS.
func TestWorkloadReadonlyServed(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		dir := u.serverDir(t)
		q := make([]string, len(u.degraded))
		for i, d := range u.degraded {
			q[i] = fmt.Sprintf("%q", d)
		}
		prof := filepath.Join(dir, "readonly.toml")
		writeOwned(t, u, prof, fmt.Sprintf("extends = \"readonly\"\nallow_degraded = [%s]\n", strings.Join(q, ", ")))
		// The first --profile is what a request without one gets.
		s := u.startServer(t, dir, "--profile", prof, "--warm", "1")
		w := u.workdir(t)
		notes := filepath.Join(w, "notes.txt")
		writeOwned(t, u, notes, "served\n")
		for i := 0; i < 3; i++ {
			r := s.call(t, req{Argv: []string{filepath.Join(w, "tjhelper"), "read", notes, ";", "write", notes, "3", ";", "mkdir", filepath.Join(w, "d")}, Workdir: w})
			l := r.ok(t, 3)
			var got string
			r.value(t, 0, &got)
			if got != "served\n" || l[1] != "errno EROFS" || l[2] != "errno EROFS" {
				t.Errorf("call %d: read %q, write %s, mkdir %s; want the file, errno EROFS twice\n%s", i, got, l[1], l[2], r)
			}
		}
		if b, _ := os.ReadFile(notes); string(b) != "served\n" {
			t.Errorf("the host file changed: %q", b)
		}
	})
}

// strict: model-written code that computes and prints, as an agent's
// "run this snippet" tool gives it: a Python script (Debian's python3)
// counts primes and prints them, within strict's small caps.
func TestWorkloadStrict(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		py := hostTool(t, "/usr/bin/python3")
		w := u.workdir(t)
		script := "import json, math\n" +
			"primes = [n for n in range(2, 50000) if all(n % d for d in range(2, math.isqrt(n) + 1))]\n" +
			"print(json.dumps({'count': len(primes), 'last': primes[-1]}))\n"
		o := u.jailRun(t, w, run{args: []string{"--profile", "strict"}}, py, "-c", script)
		workloadOK(t, o)
		workloadFigures(t, "a Python snippet that computes and prints", o)
		if o.stdout != "{\"count\": 5133, \"last\": 49999}\n" {
			t.Errorf("the snippet printed %q\n%s", o.stdout, o)
		}
		if lim := o.report.Limits; lim.MemoryBytes != 256<<20 || lim.Pids != 64 || lim.CPUs != 0.5 {
			t.Errorf("limits %+v: not strict's\n%s", lim, o)
		}
	})
}

// default: an agent's shell command over the project: find, sort, wc and
// sed in a pipeline, writing its result into the workdir.
func TestWorkloadDefault(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		sh := hostTool(t, "/bin/sh")
		for _, tool := range []string{"find", "sort", "xargs", "wc", "sed"} {
			hostTool(t, "/usr/bin/"+tool, "/bin/"+tool)
		}
		w := u.workdir(t)
		if err := os.MkdirAll(filepath.Join(w, "docs", "api"), 0o755); err != nil {
			t.Fatal(err)
		}
		chownTree(t, filepath.Join(w, "docs"), u.dirUID, u.dirGID)
		writeOwned(t, u, filepath.Join(w, "docs", "a.md"), "one\ntwo\n")
		writeOwned(t, u, filepath.Join(w, "docs", "api", "b.md"), "three\n")
		o := u.jailRun(t, w, run{}, sh, "-c", `find . -name '*.md' | sort | xargs wc -l | sed 's/^ *//' > lines.txt && cat lines.txt`)
		workloadOK(t, o)
		workloadFigures(t, "a shell pipeline over the project", o)
		want := "2 ./docs/a.md\n1 ./docs/api/b.md\n3 total\n"
		if o.stdout != want {
			t.Errorf("the pipeline printed %q, want %q\n%s", o.stdout, want, o)
		}
		if b, _ := os.ReadFile(filepath.Join(w, "lines.txt")); string(b) != want {
			t.Errorf("lines.txt on the host: %q", b)
		}
	})
}

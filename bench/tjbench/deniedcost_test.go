package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDeniedRow(t *testing.T) {
	for _, c := range []struct {
		sup  []float64
		want string
	}{
		{[]float64{4000, 4500, 9000}, "met"},
		{[]float64{6000, 4500, 9000}, "**not met**"},
		{nil, "not measured"},
	} {
		d := &deniedResult{Calls: 100, Supervisor: c.sup, Pipe: []float64{3000}}
		row := deniedRow(d)
		if row[3] != c.want {
			t.Errorf("supervisor %v: %q, want %q (%v)", c.sup, row[3], c.want, row)
		}
	}
	var b strings.Builder
	renderDenied(func(f string, a ...any) { b.WriteString(f) }, &deniedResult{})
	if !strings.Contains(b.String(), "## Denied calls") {
		t.Error("no section heading")
	}
}

// buildLoop builds bench/tjloop into dir.
func buildLoop(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build tjloop")
	}
	bin := filepath.Join(dir, "tjloop")
	cmd := exec.Command(goBin, "build", "-o", bin, "../tjloop")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build tjloop: %v: %s", err, out)
	}
	return bin
}

func TestPipeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	loop := buildLoop(t, dir)
	ns, err := pipeRoundTrip(loop, dir, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if ns <= 0 {
		t.Errorf("pipe round trip %.0f ns of CPU", ns)
	}
	t.Logf("pipe round trip: %.1f µs of the driver's CPU", ns/1000)
}

// TestDeniedCost runs the flood against the tooljail binaries in
// $TJBENCH_TOOLJAIL (colon-separated, alternated run by run): an A/B of
// the supervisor's cost per denied call. Root only, as the bench.
func TestDeniedCost(t *testing.T) {
	bins := os.Getenv("TJBENCH_TOOLJAIL")
	if bins == "" || os.Geteuid() != 0 {
		t.Skip("set TJBENCH_TOOLJAIL to tooljail binaries and run as root")
	}
	// Not under /tmp: the jail mounts its own there.
	wd, err := os.MkdirTemp(".", "denied-wd-")
	if err != nil {
		t.Fatal(err)
	}
	wd, _ = filepath.Abs(wd)
	defer os.RemoveAll(wd)
	loop := buildLoop(t, wd)
	calls, runs := 5000, 5
	for _, bin := range strings.Split(bins, ":") {
		d, err := deniedCost(bin, loop, wd, calls, 1) // warm-up
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		_ = d
	}
	res := map[string]*deniedResult{}
	for r := 0; r < runs; r++ {
		for _, bin := range strings.Split(bins, ":") {
			d, err := deniedCost(bin, loop, wd, calls, 1)
			if err != nil {
				t.Fatalf("%s: %v", bin, err)
			}
			if res[bin] == nil {
				res[bin] = &deniedResult{Calls: calls}
			}
			x := res[bin]
			x.Supervisor = append(x.Supervisor, d.Supervisor...)
			x.Payload = append(x.Payload, d.Payload...)
			x.Wall = append(x.Wall, d.Wall...)
			x.Pipe = append(x.Pipe, d.Pipe...)
		}
	}
	for _, bin := range strings.Split(bins, ":") {
		t.Logf("%s: %v", bin, deniedRow(res[bin])[2])
		t.Logf("  supervisor µs/call %v", us(res[bin].Supervisor))
		t.Logf("  command cpu µs/call %v, wall %v", us(res[bin].Payload), us(res[bin].Wall))
	}
}

func us(xs []float64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = usText(x)
	}
	return out
}

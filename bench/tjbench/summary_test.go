package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/bench"
)

func TestJudge(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		figure, bound float64
		atMost        bool
		want          string
	}{
		{1.2, 1.3, true, goalMet},
		{1.3, 1.3, true, goalMet}, // the bound itself is met
		{1.31, 1.3, true, goalNotMet},
		{2.5, 2, false, goalMet},
		{2, 2, false, goalMet},
		{1.99, 2, false, goalNotMet},
		{-0.5, 2, true, goalMet}, // the CLI adds less than the embedded jail
		{nan, 1.3, true, goalNotMeasured},
		{nan, 2, false, goalNotMeasured},
		{inf, 2, false, goalNotMeasured}, // a ratio over a zero would be no figure
	} {
		if got := judge(c.figure, c.bound, c.atMost); got != c.want {
			t.Errorf("judge(%v, %v, atMost %v) = %q, want %q", c.figure, c.bound, c.atMost, got, c.want)
		}
	}
}

func ms(v float64) timing { return timing{Summary: bench.Summary{N: 1, Median: v}} }

// measured is a run with every figure of issue 32: the CLI and embedded
// ones met, the served ones not, the proxy met and the denied call not.
func measured() *results {
	return &results{
		// tooljail run, bwrap, bare, tooljail version, Go hello world
		Startup: []timing{ms(20), ms(17), ms(3), ms(10), ms(7)},
		Layers:  []layerResult{{Label: layerEmbedded, T: ms(7)}, {Label: layerEmbeddedFresh, T: ms(9)}, {Label: layerBwrap, T: ms(16)}},
		Serve: &serveResult{
			Latency:    []serveLatency{{Variant: "served", Summary: bench.Summary{N: 1, Median: 8}}, {Variant: "bwrap", Summary: bench.Summary{N: 1, Median: 16}}},
			Session:    &serveLatency{Variant: "session", Summary: bench.Summary{N: 1, Median: 3}},
			Throughput: []serveTput{{Variant: "served", PerSec: 100, Python: 2, Server: 6, ServerChildren: 6}, {Variant: "bwrap", PerSec: 80, Python: 2, PythonChildren: 5}},
		},
		Net:    &netResult{Download: map[string][]float64{"connect": {960}, "relay": {1000}, "host": {1100}}},
		Denied: &deniedResult{Supervisor: []float64{13000}, Pipe: []float64{10000}},
	}
}

func TestGoals(t *testing.T) {
	for _, c := range []struct {
		name string
		r    *results
		want []string // verdicts in goals' order
	}{
		{"nothing measured", &results{}, []string{goalNotMeasured, goalNotMeasured, goalNotMeasured, goalNotMeasured,
			goalNotMeasured, goalNotMeasured, goalNotMeasured, goalNotMeasured, goalNotMeasured, goalNotMeasured}},
		// version 10 ÷ 7 = 1.43 ≤ 1.5; run 20 ÷ 17 = 1.18 ≤ 1.3; run − version
		// 10 − embedded 9 = 1 ≤ 2 ms; embedded 9 ÷ 16 = 0.56 ≤ 0.75; served
		// 8 ÷ 16 = 0.5 > 0.35; 100 ÷ 80 = 1.25 < 2; CPU 14 ÷ 7 = 2 > 1;
		// session 3 ÷ 16 = 0.19 ≤ 0.25; proxy 0.96 ≥ 0.95; denied 1.3 > 1.2.
		{"every figure", measured(), []string{goalMet, goalMet, goalMet, goalMet,
			goalNotMet, goalNotMet, goalNotMet, goalMet, goalMet, goalNotMet}},
		{"no session, no network, no denied calls", func() *results {
			r := measured()
			r.Serve.Session, r.Net, r.Denied = nil, nil, nil
			return r
		}(), []string{goalMet, goalMet, goalMet, goalMet,
			goalNotMet, goalNotMet, goalNotMet, goalNotMeasured, goalNotMeasured, goalNotMeasured}},
		{"an old run without the Go hello world", func() *results {
			r := measured()
			r.Startup = r.Startup[:4]
			return r
		}(), []string{goalNotMeasured, goalMet, goalMet, goalMet,
			goalNotMet, goalNotMet, goalNotMet, goalMet, goalMet, goalNotMet}},
	} {
		gs := goals(c.r)
		if len(gs) != len(c.want) {
			t.Fatalf("%s: %d goals, want %d", c.name, len(gs), len(c.want))
		}
		for i, g := range gs {
			if got := g.verdict(); got != c.want[i] {
				t.Errorf("%s: %q: %s (figure %v), want %s", c.name, g.what, got, g.figure, c.want[i])
			}
			if g.verdict() == goalNotMeasured && g.figureText() != "–" {
				t.Errorf("%s: %q is not measured but shows a figure: %q", c.name, g.what, g.figureText())
			}
		}
	}
}

// The summary is one screen: a header, a line per goal, the counts.
func TestPrintSummaryFitsScreen(t *testing.T) {
	var b strings.Builder
	gs := goals(measured())
	printSummary(&b, gs, "this run")
	out := b.String()
	if n := strings.Count(out, "\n"); n > 25 {
		t.Errorf("summary is %d lines, want ≤ 25:\n%s", n, out)
	}
	for _, g := range gs {
		if !strings.Contains(out, strings.ReplaceAll(g.what, "`", "")) {
			t.Errorf("summary lacks %q:\n%s", g.what, out)
		}
	}
	if !strings.Contains(out, "6 met, 4 not met, 0 not measured.") {
		t.Errorf("summary lacks the counts:\n%s", out)
	}
}

// savedResults takes the whole run's raw.json and a newer -only part over
// it, and leaves out a part older than raw.json.
func TestSavedResults(t *testing.T) {
	dir := t.TempDir()
	full := measured()
	full.Machine.Date = "whole"
	full.Serve.Latency[0].Summary.Median = 4
	if err := writeJSON(filepath.Join(dir, "raw.json"), sanitize(full)); err != nil {
		t.Fatal(err)
	}
	part := &results{Serve: measured().Serve, Net: &netResult{Download: map[string][]float64{"connect": {1}, "relay": {1000}}}}
	part.Machine.Date = "part"
	for _, name := range []string{"raw-serve.json", "raw-net.json"} {
		if err := writeJSON(filepath.Join(dir, name), part); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "raw.json"), old, old); err != nil {
		t.Fatal(err)
	}
	older := old.Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "raw-net.json"), older, older); err != nil {
		t.Fatal(err)
	}
	r, from, err := savedResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := med(r.Startup[0]); got != 20 {
		t.Errorf("start-up from raw.json: %v, want 20", got)
	}
	if got := r.Serve.latency("served").Median; got != 8 {
		t.Errorf("served latency %v, want the newer raw-serve.json's 8", got)
	}
	if got := bench.Median(r.Net.Download["connect"]); got != 960 {
		t.Errorf("proxy download %v, want raw.json's 960 (raw-net.json is older)", got)
	}
	if want := "raw.json of whole, -only serve of part"; from != want {
		t.Errorf("from = %q, want %q", from, want)
	}
	if _, _, err := savedResults(t.TempDir()); err == nil {
		t.Error("savedResults of an empty directory: no error")
	}
}

package bench

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	oneToTen := []float64{10, 3, 1, 7, 2, 9, 4, 8, 6, 5} // unsorted on purpose
	for _, c := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{oneToTen, 50, 5.5}, // even count: mean of the middle two
		{oneToTen, 10, 1.9},
		{oneToTen, 90, 9.1},
		{oneToTen, 0, 1},
		{oneToTen, 100, 10},
		{[]float64{3, 1, 2}, 50, 2}, // odd count: the middle one
		{[]float64{42}, 10, 42},
		{[]float64{42}, 90, 42},
		{[]float64{1, 2}, 25, 1.25},
	} {
		if got := Percentile(c.xs, c.p); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Percentile(%v, %v) = %v, want %v", c.xs, c.p, got, c.want)
		}
	}
	if oneToTen[0] != 10 || oneToTen[9] != 5 {
		t.Errorf("Percentile sorted its input in place: %v", oneToTen)
	}
	for _, c := range []struct {
		xs []float64
		p  float64
	}{{nil, 50}, {[]float64{}, 50}, {[]float64{1}, -1}, {[]float64{1}, 101}, {[]float64{1}, math.NaN()}} {
		if got := Percentile(c.xs, c.p); !math.IsNaN(got) {
			t.Errorf("Percentile(%v, %v) = %v, want NaN", c.xs, c.p, got)
		}
	}
}

func TestSummarize(t *testing.T) {
	ds := []time.Duration{4 * time.Millisecond, 1 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond, 1500 * time.Microsecond}
	s := Summarize(Millis(ds))
	want := Summary{N: 5, Median: 2, P10: 1.2, P90: 3.6, Min: 1, Max: 4}
	if s.N != want.N || math.Abs(s.Median-want.Median) > 1e-9 || math.Abs(s.P10-want.P10) > 1e-9 ||
		math.Abs(s.P90-want.P90) > 1e-9 || s.Min != want.Min || s.Max != want.Max {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if e := Summarize(nil); e.N != 0 || !math.IsNaN(e.Median) {
		t.Errorf("Summarize(nil) = %+v, want N 0 and NaN median", e)
	}
}

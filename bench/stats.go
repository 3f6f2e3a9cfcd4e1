// Package bench holds the pure parts of `make bench`: order statistics of
// timing samples, how ratios and times are written, the start-up chart and
// the generated BENCHMARKS.md with its hand-written notes kept. The
// measuring itself (jails, bwrap, /proc) lives in bench/tjbench.
package bench

import (
	"math"
	"sort"
	"time"
)

// Percentile returns the p-th percentile (0..100) of xs, interpolating
// linearly between the two closest ranks (the "R-7" rule of R and NumPy's
// default), so the median of an even count is the mean of the middle two.
// xs is not modified. It returns NaN for an empty slice or a p outside
// 0..100.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 || p < 0 || p > 100 || math.IsNaN(p) {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return s[lo] + (s[hi]-s[lo])*frac
}

// Median is Percentile(xs, 50).
func Median(xs []float64) float64 { return Percentile(xs, 50) }

// Summary describes one set of samples. Times are in milliseconds.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P10    float64 `json:"p10"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize computes the summary of xs (any unit; the callers use ms).
func Summarize(xs []float64) Summary {
	s := Summary{N: len(xs), Median: Median(xs), P10: Percentile(xs, 10), P90: Percentile(xs, 90),
		Min: Percentile(xs, 0), Max: Percentile(xs, 100)}
	return s
}

// Millis converts durations to milliseconds for Summarize.
func Millis(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d) / float64(time.Millisecond)
	}
	return out
}

package bench

import (
	"fmt"
	"math"
)

// notAvailable is what every formatter writes for a figure that could not
// be computed (no samples, a zero denominator): never a made-up number.
const notAvailable = "n/a"

func bad(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

// Ratio is num/den, NaN when den is zero or either side is not a number.
func Ratio(num, den float64) float64 {
	if den == 0 || bad(num) || bad(den) {
		return math.NaN()
	}
	return num / den
}

// FormatMs writes a time in milliseconds with three significant digits
// (0.912 ms, 4.31 ms, 27.5 ms, 412 ms).
func FormatMs(ms float64) string {
	switch {
	case bad(ms):
		return notAvailable
	case ms < 1:
		return fmt.Sprintf("%.3f ms", ms)
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// FormatRatio writes num/den as "0.74×" (two decimals).
func FormatRatio(num, den float64) string {
	r := Ratio(num, den)
	if bad(r) {
		return notAvailable
	}
	return fmt.Sprintf("%.2f×", r)
}

// FormatCost writes how much slower with is than without, as a signed
// percentage with one decimal ("+1.3 %", "-0.4 %").
func FormatCost(with, without float64) string {
	r := Ratio(with, without)
	if bad(r) {
		return notAvailable
	}
	c := (r - 1) * 100
	if math.Abs(c) < 0.05 {
		c = 0 // no "-0.0 %"
	}
	return fmt.Sprintf("%+.1f %%", c)
}

// FormatRate writes runs per second.
func FormatRate(perSec float64) string {
	if bad(perSec) {
		return notAvailable
	}
	return fmt.Sprintf("%.0f /s", perSec)
}

// FormatBytes writes a byte count in MiB with one decimal (KiB below 1 MiB).
func FormatBytes(b int64) string {
	if b < 0 {
		return notAvailable
	}
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

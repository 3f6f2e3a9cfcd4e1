package units

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// MaxCPUs bounds ParseCPUs: more is a typo, not a machine.
const MaxCPUs = 4096

// MinCPUs is the smallest CPU share accepted: cgroup cpu.max refuses a quota
// below 1 ms per 100 ms period.
const MinCPUs = 0.01

// ParseDuration parses a Go duration ("500ms", "10s", "5m", "1h30m").
// "0" and "unlimited" return 0; a negative duration is an error, and so is a
// number without a unit ("10": seconds or minutes?).
func ParseDuration(s string) (time.Duration, error) {
	if isUnlimited(s) {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit, e.g. 500ms, 10s, 5m, 1h30m, or 0/unlimited for no limit", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	return d, nil
}

// ParseCPUs parses a decimal number of CPUs ("0.5", "2"). "0" and
// "unlimited" return 0. Only plain decimals are accepted: no sign, exponent,
// hex, NaN or Inf; the value must lie in [MinCPUs, MaxCPUs].
func ParseCPUs(s string) (float64, error) {
	if isUnlimited(s) {
		return 0, nil
	}
	if !isPlainDecimal(s) {
		return 0, fmt.Errorf("invalid CPU count %q: want a decimal number of CPUs, e.g. 0.5, 1, 2, or 0/unlimited for no limit", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("invalid CPU count %q: want a decimal number of CPUs, e.g. 0.5, 1, 2", s)
	}
	if f == 0 {
		return 0, nil
	}
	if f < MinCPUs || f > MaxCPUs {
		return 0, fmt.Errorf("invalid CPU count %q: must be between %g and %d, or 0/unlimited for no limit", s, MinCPUs, MaxCPUs)
	}
	return f, nil
}

// ParseCount parses a non-negative whole number (pids, open files).
// "unlimited" returns 0.
func ParseCount(s string) (int64, error) {
	if isUnlimited(s) {
		return 0, nil
	}
	if d := leadingDigits(s); d == "" || d != s {
		return 0, fmt.Errorf("invalid count %q: want a whole number such as 256, or 0/unlimited for no limit", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid count %q: too large", s)
	}
	return n, nil
}

// isPlainDecimal reports whether s is digits with at most one '.', and at
// least one digit: "2", "0.5", ".5", "2.".
func isPlainDecimal(s string) bool {
	digits, dots := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

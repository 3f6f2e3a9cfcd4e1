// Package units parses and formats the values tooljail takes from flags and
// profiles: sizes, durations, CPU counts and plain counts. Every parser
// accepts "0" and "unlimited" for "no limit" (returned as 0) and returns an
// error that quotes the input and shows valid spellings.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Binary multipliers. Sizes are always binary: "1M" is 1 MiB.
const (
	KiB int64 = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
	PiB
	EiB
)

const sizeExamples = "want bytes with an optional binary suffix, e.g. 4096, 64K, 512M, 1G, 2GiB, or 0/unlimited for no limit"

// sizeSuffixes maps a lower-cased suffix to its multiplier. Only binary
// spellings are accepted: "KB" or "MB" are refused because readers disagree
// on whether they mean 1000 or 1024, and a limit must mean one thing.
var sizeSuffixes = map[string]int64{
	"":  1,
	"k": KiB, "ki": KiB, "kib": KiB,
	"m": MiB, "mi": MiB, "mib": MiB,
	"g": GiB, "gi": GiB, "gib": GiB,
	"t": TiB, "ti": TiB, "tib": TiB,
}

// ParseSize parses a byte count: a whole number with an optional binary
// suffix (K, M, G, T, also spelled Ki/KiB and so on, case-insensitive).
// "0" and "unlimited" return 0. Fractions ("1.5G"), signs, spaces, decimal
// SI suffixes ("1KB") and values beyond int64 are errors.
func ParseSize(s string) (int64, error) {
	if isUnlimited(s) {
		return 0, nil
	}
	digits := leadingDigits(s)
	if digits == "" {
		return 0, fmt.Errorf("invalid size %q: %s", s, sizeExamples)
	}
	rest := s[len(digits):]
	if strings.HasPrefix(rest, ".") {
		return 0, fmt.Errorf("invalid size %q: fractions are not accepted, use a smaller unit (e.g. 1536M instead of 1.5G)", s)
	}
	mult, ok := sizeSuffixes[strings.ToLower(rest)]
	if !ok {
		return 0, fmt.Errorf("invalid size %q: unknown suffix %q; %s", s, rest, sizeExamples)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid size %q: too large (at most %s)", s, FormatSize(math.MaxInt64))
	}
	return n * mult, nil
}

// FormatSize renders n bytes for people: "17 B", "100 KiB", "1.5 GiB".
// It rounds to two decimals, so it is for messages, not for parsing.
func FormatSize(n int64) string {
	if n < 0 {
		if n == math.MinInt64 {
			return "-8 EiB"
		}
		return "-" + FormatSize(-n)
	}
	units := []struct {
		name string
		size int64
	}{{"EiB", EiB}, {"PiB", PiB}, {"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}}
	for i, u := range units {
		if n < u.size {
			continue
		}
		v := math.Round(float64(n)/float64(u.size)*100) / 100
		// 1048575 bytes rounds to "1024 KiB"; show "1 MiB" instead.
		if v >= 1024 && i > 0 {
			v, u = v/1024, units[i-1]
		}
		return strconv.FormatFloat(v, 'f', -1, 64) + " " + u.name
	}
	return strconv.FormatInt(n, 10) + " B"
}

// isUnlimited reports whether s is one of the spellings of "no limit".
func isUnlimited(s string) bool {
	return s == "0" || strings.EqualFold(s, "unlimited")
}

// leadingDigits returns the ASCII decimal digits s starts with.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

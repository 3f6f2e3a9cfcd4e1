package units

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseSize: no panics; an accepted value is non-negative and parses back
// to itself from its plain byte count; FormatSize never panics on it.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "unlimited", "64K", "512MiB", "1G", "2tib", "1.5G", "-1", "12XB", "9223372036854775807", "8388608T", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("error %q does not quote input %q", err, s)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		back, err := ParseSize(strconv.FormatInt(n, 10))
		if err != nil || back != n {
			t.Fatalf("round trip of %q: %d -> %d, %v", s, n, back, err)
		}
		if FormatSize(n) == "" {
			t.Fatal("empty FormatSize")
		}
	})
}

// FuzzParseDuration: no panics; accepted durations are non-negative and
// survive a String() round trip.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "unlimited", "500ms", "10s", "5m", "1h30m", "-1s", "10", "1.5h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v < 0", s, d)
		}
		back, err := ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("round trip of %q: %v -> %v, %v", s, d, back, err)
		}
	})
}

// FuzzParseCPUs: no panics; accepted values are 0 or inside the bounds, never
// NaN or Inf, and survive a FormatFloat round trip.
func FuzzParseCPUs(f *testing.F) {
	for _, s := range []string{"0", "unlimited", "0.5", "2", ".5", "NaN", "Inf", "-1", "1e3", "4097", "0.001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCPUs(s)
		if err != nil {
			return
		}
		if math.IsNaN(c) || math.IsInf(c, 0) || (c != 0 && (c < MinCPUs || c > MaxCPUs)) {
			t.Fatalf("ParseCPUs(%q) = %v out of range", s, c)
		}
		back, err := ParseCPUs(strconv.FormatFloat(c, 'f', -1, 64))
		if err != nil || back != c {
			t.Fatalf("round trip of %q: %v -> %v, %v", s, c, back, err)
		}
	})
}

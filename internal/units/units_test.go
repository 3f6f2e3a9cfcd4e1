package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	good := map[string]int64{
		"0": 0, "unlimited": 0, "Unlimited": 0, "17": 17, "0064": 64,
		"64K": 64 << 10, "64k": 64 << 10, "64Ki": 64 << 10, "64KiB": 64 << 10, "64kib": 64 << 10,
		"512M": 512 << 20, "512MiB": 512 << 20, "1G": 1 << 30, "1gib": 1 << 30, "2T": 2 << 40, "2TiB": 2 << 40,
		"0K": 0, "9223372036854775807": math.MaxInt64, "8388607T": 8388607 << 40,
	}
	for in, want := range good {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := []string{"", " 1G", "1G ", "1 G", "-1", "+1", "1.5G", "12XB", "1KB", "1MB", "1B", "G", "1GiBB",
		"1e3", "0x10", "9223372036854775808", "8388608T", "99999999999999999999K", "unlimitedK", "∞"}
	for _, in := range bad {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseSize(%q) error %q does not quote the input", in, err)
		}
	}
	if _, err := ParseSize("12XB"); err == nil || !strings.Contains(err.Error(), "512M") {
		t.Errorf("error should show valid examples: %v", err)
	}
}

func TestFormatSize(t *testing.T) {
	cases := map[int64]string{
		0: "0 B", 17: "17 B", 1023: "1023 B", 1024: "1 KiB", 100 << 10: "100 KiB",
		512 << 20: "512 MiB", 3 << 29: "1.5 GiB", 1048575: "1 MiB", 1<<40 + 1<<38: "1.25 TiB",
		math.MaxInt64: "8 EiB", -2048: "-2 KiB", math.MinInt64: "-8 EiB",
	}
	for in, want := range cases {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "unlimited": 0, "500ms": 500 * time.Millisecond, "10s": 10 * time.Second,
		"5m": 5 * time.Minute, "1h30m": 90 * time.Minute, "0s": 0,
	}
	for in, want := range good {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "10", "-1s", "5 m", "1d", "9999999999h", "abc"} {
		if got, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseDuration(%q) error %q does not quote the input", in, err)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	good := map[string]float64{"0": 0, "unlimited": 0, "0.5": 0.5, "2": 2, ".5": 0.5, "2.": 2, "4096": 4096, "0.01": 0.01, "0.000": 0}
	for in, want := range good {
		got, err := ParseCPUs(in)
		if err != nil || got != want {
			t.Errorf("ParseCPUs(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "NaN", "Inf", "+Inf", "-1", "1e3", "0x1p-2", "4097", "0.001", "1.2.3", ".", "1_0", " 1"} {
		if got, err := ParseCPUs(in); err == nil {
			t.Errorf("ParseCPUs(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseCPUs(%q) error %q does not quote the input", in, err)
		}
	}
}

func TestParseCount(t *testing.T) {
	good := map[string]int64{"0": 0, "unlimited": 0, "256": 256, "1024": 1024}
	for in, want := range good {
		got, err := ParseCount(in)
		if err != nil || got != want {
			t.Errorf("ParseCount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5", "1K", "99999999999999999999", "ten"} {
		if got, err := ParseCount(in); err == nil {
			t.Errorf("ParseCount(%q) = %v, want an error", in, got)
		}
	}
}

package bench

import (
	"math"
	"testing"
)

func TestFormatRatio(t *testing.T) {
	for _, c := range []struct {
		num, den float64
		want     string
	}{
		{7, 10, "0.70×"},
		{10, 7, "1.43×"},
		{5, 5, "1.00×"},
		{1, 0, "n/a"},
		{math.NaN(), 1, "n/a"},
		{1, math.Inf(1), "n/a"},
	} {
		if got := FormatRatio(c.num, c.den); got != c.want {
			t.Errorf("FormatRatio(%v, %v) = %q, want %q", c.num, c.den, got, c.want)
		}
	}
}

func TestFormatCost(t *testing.T) {
	for _, c := range []struct {
		with, without float64
		want          string
	}{
		{102, 100, "+2.0 %"},
		{98.5, 100, "-1.5 %"},
		{100.01, 100, "+0.0 %"},
		{99.99, 100, "+0.0 %"}, // never "-0.0 %"
		{1, 0, "n/a"},
	} {
		if got := FormatCost(c.with, c.without); got != c.want {
			t.Errorf("FormatCost(%v, %v) = %q, want %q", c.with, c.without, got, c.want)
		}
	}
}

func TestFormatMs(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want string
	}{
		{0.9123, "0.912 ms"},
		{4.314, "4.31 ms"},
		{27.46, "27.5 ms"},
		{412.4, "412 ms"},
		{math.NaN(), "n/a"},
	} {
		if got := FormatMs(c.ms); got != c.want {
			t.Errorf("FormatMs(%v) = %q, want %q", c.ms, got, c.want)
		}
	}
}

func TestFormatRateAndBytes(t *testing.T) {
	if got := FormatRate(412.6); got != "413 /s" {
		t.Errorf("FormatRate = %q", got)
	}
	if got := FormatRate(math.NaN()); got != "n/a" {
		t.Errorf("FormatRate(NaN) = %q", got)
	}
	for _, c := range []struct {
		b    int64
		want string
	}{{512 << 10, "512.0 KiB"}, {12 << 20, "12.0 MiB"}, {(12 << 20) + (3 << 19), "13.5 MiB"}, {-1, "n/a"}} {
		if got := FormatBytes(c.b); got != c.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", c.b, got, c.want)
		}
	}
}

package hostprobe

import "testing"

func TestOverlayWhy(t *testing.T) {
	for _, c := range []struct {
		release string
		ok      bool
	}{
		{"6.18.44-fc-v1252", true}, {"6.1.0-18-amd64", true}, {"5.11.0", true}, {"5.10.209-1", false},
		{"4.19.0", false}, {"", true}, {"weird", true},
	} {
		if got := overlayWhy(c.release) == ""; got != c.ok {
			t.Errorf("overlayWhy(%q) says ok=%v", c.release, got)
		}
	}
}

package relay

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

func TestRelayBudget(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rel := New(r, &out, NewBudget(10), true)
	w.Write([]byte(strings.Repeat("a", 8)))
	w.Write([]byte(strings.Repeat("b", 10000)))
	w.Close()
	s := rel.Result()
	if s.Bytes != 10008 || !s.Truncated || out.String() != "aaaaaaaabb" {
		t.Fatalf("bytes %d truncated %v relayed %q", s.Bytes, s.Truncated, out.String())
	}
	if s.Text == nil || !strings.HasPrefix(*s.Text, "aaaaaaaabb\n[tooljail: 9998 bytes") || !strings.HasSuffix(*s.Text, strings.Repeat("b", tailKeep)) {
		t.Fatalf("captured text lacks head or tail: %.80q", *s.Text)
	}
}

// A stream that reaches the output limit is held in one buffer of about
// the limit, and its text (marker and tail included) is made in it.
func TestRelayCaptureInPlace(t *testing.T) {
	const limit = 1<<20 + 12345
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	budget := NewBudget(limit)
	rel := New(r, nil, budget, true)
	chunk := bytes.Repeat([]byte{1}, 50000)
	go func() {
		for range 30 {
			w.Write(chunk)
		}
		w.Close()
	}()
	<-rel.done
	head := rel.head
	if len(head) != limit || cap(head) > limit+markerRoom+tailKeep {
		t.Fatalf("head of %d bytes in a buffer of %d (limit %d)", len(head), cap(head), limit)
	}
	s := rel.Result()
	if !s.Truncated || s.Bytes != 30*50000 || s.Text == nil {
		t.Fatalf("stream %+v", s)
	}
	text := *s.Text
	if unsafe.StringData(text) != unsafe.SliceData(head) {
		t.Errorf("the text was copied out of the capture buffer")
	}
	if !strings.HasPrefix(text, string(chunk[:100])) || !strings.HasSuffix(text, "follow]\n"+string(chunk[:tailKeep])) ||
		!strings.Contains(text, "[tooljail: 439079 bytes over the output limit dropped; the last 4096 follow]") {
		t.Errorf("text: %q ... %q", text[:40], text[limit-40:])
	}
	if s2 := rel.Result(); s2.Text != s.Text {
		t.Errorf("a second stream call made the text again")
	}
}

// Captured but empty: an empty text, not none.
func TestRelayCaptureEmpty(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	s := New(r, nil, NewBudget(-1), true).Result()
	if s.Text == nil || *s.Text != "" || s.Bytes != 0 {
		t.Errorf("stream %+v", s)
	}
}

// A capture reads 64 KiB at a time, a relay that does not the whole pipe.
func TestReadBufs(t *testing.T) {
	for _, c := range []struct {
		capture bool
		want    *sync.Pool
		size    int
	}{
		{false, &relayBufs, PipeSize},
		{true, &captureBufs, 64 << 10},
	} {
		pool := readBufs(c.capture)
		if pool != c.want {
			t.Errorf("capture %v: readBufs gave the other pool", c.capture)
			continue
		}
		bp := pool.Get().(*[]byte)
		if len(*bp) != c.size {
			t.Errorf("capture %v: a buffer of %d bytes, want %d", c.capture, len(*bp), c.size)
		}
		pool.Put(bp)
	}
}

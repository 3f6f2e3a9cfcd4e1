package jail

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail/internal/relay"
	"github.com/tooljail/tooljail/report"
)

// A relay's capture of random bytes, through a pipe in odd chunks, gives
// them back exactly through the JSON report; valid UTF-8 gets no base64.
func TestRelayCaptureExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name  string
		bytes func(n int) []byte
		b64   bool
	}{
		{"random", func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}, true},
		{"utf-8", func(n int) []byte { return []byte(strings.Repeat("€a😀", n/8+1))[:n/8*8] }, false},
	} {
		data := c.bytes(3<<20 + 17)
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		rel := relay.New(r, nil, relay.NewBudget(-1), true)
		go func() {
			rest := data
			for len(rest) > 0 {
				n := min(len(rest), 1+rng.IntN(100000))
				w.Write(rest[:n])
				rest = rest[n:]
			}
			w.Close()
		}()
		s := streamOf(rel.Result())
		if (s.Base64 != nil) != c.b64 {
			t.Errorf("%s: base64 %v, want %v", c.name, s.Base64 != nil, c.b64)
		}
		rep, err := report.EncodeReport(&Result{Stdout: s}, "  ")
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep.WriteTo(&out)
		var back Result
		if err := json.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatal(err)
		}
		back.Stdout.Exact()
		if sha256.Sum256([]byte(*back.Stdout.Text)) != sha256.Sum256(data) {
			t.Errorf("%s: the bytes do not come back", c.name)
		}
	}
}

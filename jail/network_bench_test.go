package jail_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
)

// BenchmarkDownload measures a 100 MiB download by curl in the jail from
// a server on the host's loopback: through the allow mode's HTTP proxy, a
// plain request and a CONNECT tunnel, and with the host's network for
// comparison (the target: the proxy at 0.8x or better). Each
// iteration is a whole run, start-up included; MB/s is the download's.
// On loopback the proxy's copy competes with curl and the server for the
// same CPUs, which the host's network does not.
//
//	go test -run - -bench Download -benchtime 5x ./jail/
func BenchmarkDownload(b *testing.B) {
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		b.Skip("no /usr/bin/curl here")
	}
	const size = 100 << 20
	chunk := []byte(strings.Repeat("x", 1<<20))
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < size/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer up.Close()
	addr := strings.TrimPrefix(up.URL, "http://")
	for _, variant := range []string{"allow-http", "allow-connect", "host"} {
		b.Run(variant, func(b *testing.B) {
			mode, via, _ := strings.Cut(variant, "-")
			p, err := profiles.Load("default")
			if err != nil {
				b.Fatal(err)
			}
			m := mode
			p.Network.Mode = &m
			p.Network.Allow = []string{addr}
			no := false
			p.Filesystem.Workdir = &no
			p.AllowDegraded = append(p.AllowDegraded, jail.LayerCgroup)
			args := []string{"/usr/bin/curl", "-sS", "-o", "/dev/null", "--noproxy", "", up.URL + "/"}
			switch via {
			case "http": // a plain request in absolute form
				args = append(args[:len(args)-1], "-x", "http://127.0.0.1:3128", up.URL+"/")
			case "connect": // a tunnel, as for HTTPS
				args = append(args[:len(args)-1], "-p", "-x", "http://127.0.0.1:3128", up.URL+"/")
			}
			spec, err := p.Spec(profiles.Request{Args: args, Cwd: "/"})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := jail.Command(spec)
				cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
				res, err := cmd.Run()
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %v %+v", err, res)
				}
			}
		})
	}
}

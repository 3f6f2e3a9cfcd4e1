package proxy

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkDownload moves 100 MiB from a local server to the client,
// directly and through each proxy, so the proxies' cost shows as the
// difference (DESIGN.md section 8 asks for at least 0.8x of direct).
func BenchmarkDownload(b *testing.B) {
	const size = 100 << 20
	chunk := make([]byte, 256<<10)
	src := serveTCP(b, "127.0.0.1:0", func(c net.Conn) {
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	port := portOf(b, src)
	for _, via := range []string{"direct", "connect", "socks5"} {
		b.Run(via, func(b *testing.B) {
			p := startProxy(b, Config{Allow: mustList(b, fmt.Sprintf("127.0.0.1:%d", port))})
			b.SetBytes(size)
			for b.Loop() {
				var c net.Conn
				var r io.Reader
				switch via {
				case "direct":
					c = dial(b, src)
					r = c
				case "connect":
					c, r, _ = connect(b, p.http, src)
				case "socks5":
					c, r, _ = socks(b, p.socks, socksRequest(1, "127.0.0.1", port))
				}
				if n, err := io.Copy(io.Discard, r); n != size || err != nil {
					b.Fatalf("%d bytes, %v", n, err)
				}
				c.Close()
				if via != "direct" {
					<-p.events.ch
				}
			}
		})
	}
}

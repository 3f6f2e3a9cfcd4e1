package hello

import (
	"crypto/tls"
	"testing"
)

// BenchmarkParse parses ClientHellos that crypto/tls clients send, whole
// and recut into small records, as the proxy does once per tunnel that
// starts with TLS. One op is one Parse.
func BenchmarkParse(b *testing.B) {
	var hellos [][]byte
	for _, cfg := range []*tls.Config{
		{ServerName: "example.com"},
		{ServerName: "pypi.org", NextProtos: []string{"h2", "http/1.1"}, MaxVersion: tls.VersionTLS12},
		{ServerName: "files.pythonhosted.org", MinVersion: tls.VersionTLS13},
		{InsecureSkipVerify: true},
	} {
		raw := goHello(b, cfg)
		hellos = append(hellos, raw, frame(unframe(b, raw), 100))
	}
	i := 0
	for b.Loop() {
		if _, err := Parse(hellos[i%len(hellos)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

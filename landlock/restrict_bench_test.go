package landlock

import (
	"os"
	"testing"
)

// jailLikePolicy is about the size of the default profile's policy.
func jailLikePolicy(t testing.TB, work string) Policy {
	rules := []Rule{{"/", List}, {"/usr", ReadExec}, {"/proc", Read}, {"/tmp", ReadWrite}, {work, ReadWrite}}
	for _, p := range []string{"/lib64", "/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/localtime", "/etc/ssl", "/etc/passwd", "/etc/group", "/etc/hosts"} {
		if _, err := os.Stat(p); err == nil {
			rules = append(rules, Rule{p, Read})
		}
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/pts", "/dev/ptmx"} {
		if _, err := os.Stat(p); err == nil {
			rules = append(rules, Rule{p, Device})
		}
	}
	if _, err := os.Stat("/dev/shm"); err == nil {
		rules = append(rules, Rule{"/dev/shm", ReadWrite})
	}
	return Policy{Rules: rules, RestrictTCP: true, ConnectTCP: []uint16{3128}}
}

// BenchmarkRestrict measures Restrict in a child with 4 extra threads and a
// jail-sized policy. A process can stack at most 16 domains, so one child
// restricts up to 15 times; "first-us" is the first call (what a run pays),
// "us/restrict" the mean.
func BenchmarkRestrict(b *testing.B) { benchRestrict(b, false) }

// BenchmarkRestrictThread is BenchmarkRestrict with RestrictThread: the
// cost stage 2 pays.
func BenchmarkRestrictThread(b *testing.B) { benchRestrict(b, true) }

func benchRestrict(b *testing.B, threadOnly bool) {
	if Probe().ABI == 0 {
		b.Skip("no Landlock")
	}
	work := b.TempDir()
	var first, total float64
	var n int
	for done := 0; done < b.N; {
		k := min(b.N-done, 15)
		res := run(b, scenario{Policy: jailLikePolicy(b, work), Threads: benchThreads, Repeat: k, ThreadOnly: threadOnly}, nil)
		if res.Err != "" || len(res.Micros) != k {
			b.Fatalf("restrict (thread only: %v): %s (%d calls)", threadOnly, res.Err, len(res.Micros))
		}
		if done == 0 {
			first = res.Micros[0]
		}
		for _, m := range res.Micros {
			total += m
		}
		n += k
		done += k
	}
	b.ReportMetric(first, "first-us")
	b.ReportMetric(total/float64(n), "us/restrict")
	b.ReportMetric(0, "ns/op")
}

var benchThreads = 4

package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The forged requests of issue 27's red team: one request line of 63 MiB
// of tiny env entries took the server from 11 MB to 1.6 GB, 16 M
// one-letter argv strings to 1.8 GB, three at once got it OOM-killed. Now
// argv and env are measured before they are decoded and all requests
// share one budget: the server's peak stays under 256 MiB, and it still
// answers a normal call after.
func TestServeMemoryBound(t *testing.T) {
	const bound = 256 << 20
	env := forgedEnv(63 << 20)
	argv := forgedArgv(16<<20 - 16) // 16 M strings, just within MaxRequest
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "")
		// The line comes right after the socket is there.
		start := "tooljail: serve: serving on unix socket " + s.sock + " ("
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(s.log(), start) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		if log := s.log(); !strings.Contains(log, start) || strings.Count(log, "\n") != 1 {
			t.Errorf("no start line naming the socket on stderr, alone on its line: %q", log)
		}
		t.Logf("start line: %s", s.log())
		var wg sync.WaitGroup
		results := make([]string, 6)
		for i, line := range [][]byte{env, argv, env, argv, env, argv} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.forge(u, line)
			}()
		}
		wg.Wait()
		for i, r := range results {
			if strings.Contains(r, `"schema"`) {
				t.Errorf("forged request %d ran: %.300s", i, r)
			}
			t.Logf("forged request %d: %.200s", i, r)
		}
		hwm := vmHWM(t, s.cmd.Process.Pid)
		t.Logf("the server's peak RSS: %d MiB", hwm>>20)
		if hwm > bound {
			t.Errorf("the server's peak RSS (VmHWM) was %d MiB, over %d MiB", hwm>>20, bound>>20)
		}
		mark := marker("after")
		r := s.call(t, req{Argv: []string{"/bin/echo", mark}})
		if r.report == nil || r.stdout() != mark+"\n" {
			t.Fatalf("a normal call after the forged ones: %s", r)
		}
		// Each forged request alone is refused for what it is.
		for _, c := range []struct {
			line []byte
			want string
		}{{env, "env: more than 2097152 bytes"}, {argv, "argv: more than 2097152 bytes"}} {
			if got := s.forge(u, c.line); !strings.Contains(got, c.want) {
				t.Errorf("a forged request alone: %.300s, want an error line with %q", got, c.want)
			}
		}
		if hwm := vmHWM(t, s.cmd.Process.Pid); hwm > bound {
			t.Errorf("the server's peak RSS (VmHWM) was %d MiB, over %d MiB", hwm>>20, bound>>20)
		}
	})
}

// forge sends line as u and returns what came back, or why nothing did: a
// server that refuses a request before reading all of it may reset the
// connection under the writer.
func (s *server) forge(u *user, line []byte) string {
	c, err := dialAs(u, s.sock)
	if err != nil {
		return "connect: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute * slow))
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(line)
		werr <- err
	}()
	b, rerr := bufio.NewReader(c).ReadBytes('\n')
	if len(b) > 0 {
		return string(b)
	}
	return fmt.Sprintf("no answer: read %v, write %v", rerr, <-werr)
}

func forgedEnv(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"argv":["/bin/true"],"env":{`)
	for i := 0; b.Len() < size-32; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strconv.FormatInt(int64(i), 36) + `":""`)
	}
	b.WriteString("}}\n")
	return b.Bytes()
}

func forgedArgv(n int) []byte {
	b := make([]byte, 0, 4*n+16)
	b = append(b, `{"argv":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"a"`...)
	}
	return append(b, "]}\n"...)
}

// vmHWM is the peak resident set of pid, from /proc/PID/status.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

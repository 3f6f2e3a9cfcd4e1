package integration

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// One greedy client holding every place for waiting connections (4 ×
// --max-runs) does not lock another client out: the other's call takes
// the greedy client's oldest place and is served, and the evicted
// connection is told why. A call that finds the run slot busy queues and
// runs when the slot frees.
func TestServeFairAdmission(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		s := u.startServer(t, "", "--max-runs", "1", "--queue-timeout", "2m")
		// The greedy client is this test process: one uid and pid. It
		// connects until the server refuses it at once: every place is
		// taken (a connection of waitReady's may still hold one).
		var idle []net.Conn
		for {
			c, err := net.Dial("unix", s.sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// The fifth must be refused: wait for its line as long as it
			// takes. One of the first four is only looked at briefly.
			wait := 200 * time.Millisecond
			if len(idle) == 4 {
				wait = time.Minute * slow
			}
			c.SetDeadline(time.Now().Add(wait))
			line, _ := bufio.NewReader(c).ReadString('\n')
			if strings.Contains(line, "waiting to send their request") {
				c.Close()
				break
			}
			if line != "" || len(idle) == 4 {
				t.Fatalf("the greedy client's connection %d: %q, want it left waiting, then a refusal after 4", len(idle), line)
			}
			c.SetDeadline(time.Time{})
			idle = append(idle, c)
		}
		// Another client (another process) is served all the same.
		mark := marker("fair")
		other, err := dialFresh(u, s.sock)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		other.SetDeadline(time.Now().Add(time.Minute * slow))
		if _, err := other.Write(mustJSON(t, req{Argv: []string{"/bin/echo", mark}})); err != nil {
			t.Fatal(err)
		}
		r, err := readReply(bufio.NewReader(other), nil)
		if err != nil || r.stdout() != mark+"\n" {
			t.Fatalf("the other client's call: %v\n%s\nserver log:\n%s", err, r, s.log())
		}
		// The greedy client's oldest connection lost its place, and says
		// so (when all four places were its own).
		if len(idle) == 4 {
			idle[0].SetDeadline(time.Now().Add(time.Minute * slow))
			line, _ := bufio.NewReader(idle[0]).ReadString('\n')
			if !strings.Contains(line, "another client needed one") {
				t.Errorf("the evicted connection: %q, want the error line saying why", line)
			}
		}
		for _, c := range idle {
			c.Close()
		}

		// The one slot busy: a second call queues, and runs when it frees.
		args, sleepMarkArg := sleepMark()
		p := s.start(t, req{Argv: []string{"/bin/sh", "-c", "echo started; exec /bin/sleep " + args}})
		done := make(chan *reply, 1)
		go func() {
			r, _ := s.try(u, mustJSON(t, req{Argv: []string{"/bin/echo", mark + "-queued"}}))
			done <- r
		}()
		select {
		case r := <-done:
			t.Fatalf("the second call did not wait for the busy slot\n%s", r)
		case <-time.After(500 * time.Millisecond):
		}
		p.c.Close() // the first call is cancelled: its slot frees
		r = <-done
		if r == nil || r.stdout() != mark+"-queued\n" {
			t.Fatalf("the queued call did not run when the slot freed\n%s\nserver log:\n%s", r, s.log())
		}
		requireGone(t, sleepMarkArg)
	})
}

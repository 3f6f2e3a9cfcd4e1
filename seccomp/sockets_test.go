package seccomp

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// socketProbes are the calls the "sockets" child makes.
var socketProbes = map[string]func() unix.Errno{
	"unix":          sys(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM, 0),
	"inet":          sys(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0),
	"inet6":         sys(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, 0),
	"netlink-route": sys(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE),
	"socketpair": func() unix.Errno {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err.(unix.Errno)
		}
		unix.Close(fds[0])
		unix.Close(fds[1])
		return 0
	},
}

func childSockets() int {
	res := map[string]int{}
	for name, call := range socketProbes {
		res[name] = int(call())
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// DenySockets refuses socket(2) for its families whatever Allow says,
// and nothing else: socketpair and the other families stay as they were.
func TestDenySockets(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		denied string // the probes that fail with EPERM
	}{
		{Policy{}, ""},
		{Policy{DenySockets: []string{"unix"}}, "unix"},
		{Policy{DenySockets: []string{"unix", "inet"}}, "inet inet6 unix"},
		// Allowing socket by name lifts its family check, not this one.
		{Policy{Allow: []string{"socket"}, DenySockets: []string{"unix"}}, "unix"},
		{Policy{Allow: []string{"socket"}, DenySockets: []string{"unix", "inet"}}, "inet inet6 unix"},
	} {
		t.Run(fmt.Sprintf("%q-%q", tc.policy.Allow, tc.policy.DenySockets), func(t *testing.T) {
			prog, err := (&Compiler{}).Compile(tc.policy, false)
			if err != nil {
				t.Fatal(err)
			}
			j := startJailed(t, prog, "sockets", childOpts{action: ActionDeny})
			if st, _ := j.wait(t); !st.Success() {
				t.Fatalf("child: %v; stderr: %s", st, j.stderr.String())
			}
			var got map[string]int
			if err := json.Unmarshal(j.stdout.Bytes(), &got); err != nil {
				t.Fatalf("child output %q: %v", j.stdout.String(), err)
			}
			for name := range socketProbes {
				want := unix.Errno(0)
				if strings.Contains(" "+tc.denied+" ", " "+name+" ") {
					want = unix.EPERM
				}
				if e := unix.Errno(got[name]); e != want {
					t.Errorf("%s: %v, want %v", name, e, want)
				}
			}
		})
	}
	if err := Validate(Policy{DenySockets: []string{"packet"}}); err == nil || !strings.Contains(err.Error(), "packet") {
		t.Errorf("an unknown family: %v", err)
	}
	// The keys of policies without it are those of before.
	if cacheKey(Policy{}, true) == cacheKey(Policy{DenySockets: []string{"unix"}}, true) {
		t.Error("DenySockets is not in the cache key")
	}
}

package integration

import (
	"testing"
)

// On x86_64 the x32 ABI is selected by bit 30 of the syscall number
// (__X32_SYSCALL_BIT), which syscall(-1) has too. Numbers with the bit that
// are no x32 entry point fail with ENOSYS, as the kernel answers them, and
// are no violation (not even with --on-violation kill); a real x32 entry
// point still kills the run as an "arch" violation. The raw calls are made
// by tjsys (nr:NUMBER), before the x32 one that ends the run.
func TestSeccompX32Numbers(t *testing.T) {
	requireAmd64Policy(t)
	eachUser(t, func(t *testing.T, u *user) {
		requireNotify(t, u)
		for _, mode := range []string{"deny", "kill"} {
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				w := u.sysWorkdir(t)
				calls := []string{
					"nr:-1",         // syscall(-1): 0xffffffff
					"nr:0x40001000", // bit 30, past the x32 table
					"nr:0x7fffffff",
					"nr:0xc0000027", // bit 31 with an x32 getpid
					"getppid",       // the run goes on
					"nr:0x40000027", // x32 getpid: a real entry point
					"getppid",       // never reached
				}
				o, r := u.sys(t, w, []string{"--on-violation", mode}, calls...)
				want := []string{"errno ENOSYS", "errno ENOSYS", "errno ENOSYS", "errno ENOSYS", "ok"}
				l := o.lines()
				if len(l) != len(want) {
					t.Fatalf("want %d lines %q, then the x32 call killed\n%s", len(want), want, o)
				}
				for i := range want {
					if l[i] != want[i] {
						t.Errorf("%s: %q, want %q", calls[i], l[i], want[i])
					}
				}
				if o.code != 159 || r.Status != "violation" {
					t.Errorf("want exit 159, status violation (the x32 getpid)\n%s", o)
				}
				v := r.find("x32:getpid")
				if v == nil || v.Kind != "arch" || v.Action != "killed" || v.Count != 1 || len(r.Violations) != 1 {
					t.Errorf("want one arch violation x32:getpid, killed, and nothing for the ENOSYS numbers: %+v\n%s", r.Violations, o)
				}
			})
		}
	})
}

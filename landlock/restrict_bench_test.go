package landlock_test

import (
	"testing"

	"github.com/tooljail/tooljail/jail"
)

// BenchmarkJail runs /bin/true in a jail of the default profile (seccomp
// and cgroup caps off) without Landlock and with it: the difference is
// what a run pays for Landlock (Compile in the supervisor, the ruleset
// built by the init, entered by stage 2).
func BenchmarkJail(b *testing.B) {
	requireABI(b, 1)
	s := jailSpec(b, ownedDir(b))
	s.Args = []string{"/bin/true"}
	for _, c := range []struct {
		name string
		spec *jail.Spec
	}{{"landlock=off", withoutLandlock(s)}, {"landlock=on", s}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := jail.Command(c.spec).Run()
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("run: %+v, %v", res, err)
				}
			}
		})
	}
}

package initlandlock_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/internal/landlockops"
	"github.com/tooljail/tooljail/jail/internal/initlandlock"
	"github.com/tooljail/tooljail/landlock"
)

// The behaviour tests restrict a re-executed copy of the test binary,
// never the test process itself: TestMain runs the scenario passed in
// envScenario and exits. The child does what the jail does with a policy,
// on its one locked thread: landlock.Compile, the init's tj_landlock (here
// on the host's paths), then stage 2's no_new_privs and
// landlock_restrict_self, which restricts only the calling thread; then
// it runs the ops on that thread and prints each result.
const envScenario = "TOOLJAIL_INITLANDLOCK_TEST_SCENARIO"

type scenario struct {
	Policy landlock.Policy     `json:"policy"`
	Binds  []initlandlock.Bind `json:"binds,omitempty"`
	// Plan, when set, is built instead of the compiled Policy.
	Plan       *landlock.Plan `json:"plan,omitempty"`
	NoRestrict bool           `json:"no_restrict,omitempty"` // control run: ops without Landlock
	Ops        []op           `json:"ops"`
}

// op is one thing the child does (landlockops.Run).
type op = landlockops.Op

type childResult struct {
	Enforced landlock.Enforced `json:"enforced"`
	Err      string            `json:"err,omitempty"` // the ruleset was not built or entered
	Results  []string          `json:"results"`
}

func TestMain(m *testing.M) {
	if sc := os.Getenv(envScenario); sc != "" {
		os.Exit(childMain(sc))
	}
	os.Exit(m.Run())
}

func childMain(raw string) int {
	var sc scenario
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		fmt.Fprintln(os.Stderr, "bad scenario:", err)
		return 2
	}
	runtime.LockOSThread() // the ops run on the restricted thread; never unlocked
	var res childResult
	if !sc.NoRestrict {
		en, err := restrict(sc)
		res.Enforced = en
		if err != nil {
			res.Err = err.Error()
		}
	}
	for _, o := range sc.Ops {
		res.Results = append(res.Results, landlockops.Run(o))
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	return 0
}

// restrict builds the scenario's ruleset as the init does and enters it
// on the calling thread as stage 2 does.
func restrict(sc scenario) (landlock.Enforced, error) {
	var rs initlandlock.Ruleset
	var en landlock.Enforced
	var err error
	if sc.Plan != nil {
		rs, err = initlandlock.BuildPlan(*sc.Plan, sc.Binds...)
	} else {
		rs, en, err = initlandlock.Build(sc.Policy, sc.Binds...)
	}
	if err != nil {
		return en, err
	}
	defer unix.Close(rs.FD)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return en, fmt.Errorf("no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(rs.FD, rs.Flags); err != nil {
		return en, fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return en, nil
}

// run executes sc in a child of the test binary, as cred when not nil.
func run(t testing.TB, sc scenario, cred *syscall.Credential) childResult {
	t.Helper()
	raw, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	// /proc/self/exe: a magic link, so uid 65534 needs no search right on
	// the directories of the test binary.
	cmd := exec.Command("/proc/self/exe", "-test.run=^$")
	cmd.Env = append(os.Environ(), envScenario+"="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstderr: %s", err, stderr.String())
	}
	var res childResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || len(res.Results) != len(sc.Ops) {
		t.Fatalf("child output %q: %v (stderr %s)", stdout.String(), err, stderr.String())
	}
	return res
}

// restricted is run for a scenario whose ruleset must be built and entered.
func restricted(t testing.TB, sc scenario, cred *syscall.Credential) childResult {
	t.Helper()
	got := run(t, sc, cred)
	if got.Err != "" {
		t.Fatalf("ruleset: %s", got.Err)
	}
	return got
}

var nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

// identities are the users the behaviour tests run as: root and uid 65534
// when the test is root, else the test's own user.
func identities() map[string]*syscall.Credential {
	if os.Geteuid() != 0 {
		return map[string]*syscall.Credential{"self": nil}
	}
	return map[string]*syscall.Credential{"root": nil, "uid65534": nobody}
}

func requireABI(t *testing.T, abi int) landlock.Support {
	t.Helper()
	s := landlock.Probe()
	if s.ABI < abi {
		t.Skipf("needs Landlock ABI %d, kernel offers %d (%s)", abi, s.ABI, s.Reason)
	}
	return s
}

// listenTCP listens on 127.0.0.1 with plain TCP and returns the port.
func listenTCP(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	l, err := lc.Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// matches says whether got is one of the "|"-separated wants.
func matches(got, want string) bool {
	for _, w := range strings.Split(want, "|") {
		if got == w {
			return true
		}
	}
	return false
}

package cgroup

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

// These tests need no cgroups: they run the parsing and path logic on
// fixed inputs and on fake cgroup directories in a temp dir.

func TestParseProcCgroup(t *testing.T) {
	pc, err := parseProcCgroup([]byte("9:name=systemd:/\n4:memory:/process_api/x\n2:cpu,cpuacct:/a\n0::/user.slice/u.scope\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name=systemd": "/", "memory": "/process_api/x", "cpu": "/a", "cpuacct": "/a"}
	if !reflect.DeepEqual(pc.v1, want) || pc.unified != "/user.slice/u.scope" || !pc.hasV2 {
		t.Fatalf("got %+v", pc)
	}
	if _, err := parseProcCgroup([]byte("garbage\n")); err == nil {
		t.Fatal("malformed line accepted")
	}
}

func TestParseMountInfo(t *testing.T) {
	mi := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
36 31 0:33 /ctr /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
50 23 0:40 / /mnt/with\040space rw - cgroup cgroup rw,pids
`
	cm := parseMountInfo([]byte(mi))
	if cm.unified == nil || cm.unified.point != "/sys/fs/cgroup/unified" {
		t.Fatalf("unified = %+v", cm.unified)
	}
	if m := cm.v1["cpuacct"]; m.point != "/sys/fs/cgroup/cpu,cpuacct" {
		t.Errorf("cpuacct = %+v", m)
	}
	if m := cm.v1["memory"]; m.root != "/ctr" {
		t.Errorf("memory = %+v", m)
	}
	if _, ok := cm.v1["xattr"]; ok {
		t.Error("mount option taken for a controller")
	}
	if m := cm.v1["pids"]; m.point != "/mnt/with space" {
		t.Errorf("escaped mount point = %q", m.point)
	}
	if got := hostDir(cm.v1["memory"], "/ctr/run/x"); got != "/sys/fs/cgroup/memory/run/x" {
		t.Errorf("hostDir under a mount root = %s", got)
	}
	if got := hostDir(*cm.unified, "/"); got != "/sys/fs/cgroup/unified" {
		t.Errorf("hostDir of / = %s", got)
	}
}

func TestOwnerNames(t *testing.T) {
	n := ownerName(1234, 987654, 4026531836)
	pid, st, ns, ok := parseOwnerName(n)
	if !ok || pid != 1234 || st != 987654 || ns != 4026531836 {
		t.Fatalf("round trip of %s: %d %d %d %v", n, pid, st, ns, ok)
	}
	for _, bad := range []string{"tooljail-", "tooljail-1-2", "tooljail-x-2-3", "tooljail-0-2-3", "other-1-2-3", "tooljail-1-2-3-4"} {
		if _, _, _, ok := parseOwnerName(bad); ok {
			t.Errorf("%q parsed as an owner", bad)
		}
	}
	for _, id := range []string{"a", "x-y-z", "run-1.2_3"} {
		owner, got, ok := cutFlatRun(flatRunName(n, id))
		if !ok || owner != n || got != id {
			t.Errorf("flat run name of %q: %q %q %v", id, owner, got, ok)
		}
	}
	for _, bad := range []string{n, n + "-", n + "-run-", n + "-x-a", n + "-run-a/b", "tooljail-x-2-3-run-a", "tooljail-1-2-run-a"} {
		if _, _, ok := cutFlatRun(bad); ok {
			t.Errorf("%q parsed as a flat run name", bad)
		}
	}
	if got := v2Base("/user.slice/s.scope/"+n+"/supervisor", n); got != "/user.slice/s.scope" {
		t.Errorf("v2Base from own leaf = %s", got)
	}
	if got := v2Base("/user.slice/s.scope/tooljail-9-9-9/supervisor", n); got != "/user.slice/s.scope/tooljail-9-9-9/supervisor" {
		t.Errorf("v2Base treated another supervisor's leaf as ours: %s", got)
	}
}

func TestParseStatStartTime(t *testing.T) {
	line := "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 777 1000 10\n"
	st, err := parseStatStartTime([]byte(line))
	if err != nil || st != 777 {
		t.Fatalf("start = %d, %v", st, err)
	}
	own, err := procStartTime(os.Getpid())
	if err != nil || own == 0 || !ownerAlive(os.Getpid(), own) || ownerAlive(os.Getpid(), own+1) {
		t.Fatalf("own start time %d, %v", own, err)
	}
}

func TestValidRunID(t *testing.T) {
	for _, ok := range []string{"a", "run.1_x-Y"} {
		if err := validRunID(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", string(make([]byte, 129))} {
		if validRunID(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCPUQuotaValue(t *testing.T) {
	for cpus, want := range map[float64]int64{0.5: 50000, 2: 200000, 0.001: 1000, 1.25: 125000} {
		if got := cpuQuota(cpus); got != want {
			t.Errorf("cpuQuota(%v) = %d, want %d", cpus, got, want)
		}
	}
}

func TestMask(t *testing.T) {
	s := Support{Controllers: map[string]bool{Memory: true, CPU: false, Pids: false}}
	r, dropped := s.Mask(Resources{Memory: 1, CPUs: 1, Pids: 0})
	if r != (Resources{Memory: 1}) || !reflect.DeepEqual(dropped, []string{CPU}) {
		t.Fatalf("Mask = %+v %v", r, dropped)
	}
}

func fakeDir(t *testing.T, files map[string]string) string {
	d := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func TestStatsV2Fake(t *testing.T) {
	d := fakeDir(t, map[string]string{
		"memory.peak":   "104857600\n",
		"memory.max":    "536870912\n",
		"memory.events": "low 0\nhigh 0\nmax 12\noom 1\noom_kill 3\noom_group_kill 1\n",
		"pids.peak":     "32\n",
		"pids.events":   "max 7\n",
		"cpu.stat":      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 20\nnr_throttled 9\nthrottled_usec 4242\n",
	})
	st := statsV2(readFile, d, Resources{Memory: 512 * mib}, AllFigures)
	want := map[string]int64{"peak": 104857600, "limit": 536870912, "oom": 3, "pidspeak": 32, "hits": 7, "user": 1000, "sys": 500, "thr": 4242}
	got := map[string]*int64{"peak": st.MemoryPeak, "limit": st.MemoryLimit, "oom": st.OOMKills, "pidspeak": st.PidsPeak, "hits": st.PidsLimitHits, "user": st.CPUUserUsec, "sys": st.CPUSystemUsec, "thr": st.CPUThrottledUs}
	for k, w := range want {
		if got[k] == nil || *got[k] != w {
			t.Errorf("%s = %s, want %d", k, fmtp(got[k]), w)
		}
	}
	// A kernel without memory.peak / pids.peak, and a group without the
	// cpu controller (core cpu.stat only): those figures are nil, not 0.
	d = fakeDir(t, map[string]string{
		"memory.events": "oom_kill 0\n",
		"cpu.stat":      "usage_usec 10\nuser_usec 6\nsystem_usec 4\n",
	})
	st = statsV2(readFile, d, Resources{}, AllFigures)
	if st.MemoryPeak != nil || st.PidsPeak != nil || st.PidsLimitHits != nil || st.CPUThrottledUs != nil || st.MemoryLimit != nil {
		t.Errorf("absent figures reported: %+v", st)
	}
	if st.OOMKills == nil || *st.OOMKills != 0 || st.CPUUserUsec == nil || *st.CPUUserUsec != 6 {
		t.Errorf("present figures lost: %+v", st)
	}
}

func TestStatsV1Fake(t *testing.T) {
	mem := fakeDir(t, map[string]string{
		"memory.max_usage_in_bytes": "2000\n",
		"memory.limit_in_bytes":     "4096\n",
		"memory.oom_control":        "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
	})
	acct := fakeDir(t, map[string]string{"cpuacct.stat": "user 150\nsystem 50\n"})
	cpu := fakeDir(t, map[string]string{"cpu.stat": "nr_periods 3\nnr_throttled 2\nthrottled_time 5000000\n"})
	pids := fakeDir(t, map[string]string{"pids.events": "max 4\n"})
	dirs := v1Dirs{Memory: mem, "cpuacct": acct, CPU: cpu, Pids: pids}
	st := statsV1(readFile, dirs, Resources{Memory: 4096}, AllFigures)
	chk := func(name string, p *int64, want int64) {
		if p == nil || *p != want {
			t.Errorf("%s = %s, want %d", name, fmtp(p), want)
		}
	}
	chk("peak", st.MemoryPeak, 2000)
	chk("limit", st.MemoryLimit, 4096)
	chk("oom", st.OOMKills, 2)
	chk("hits", st.PidsLimitHits, 4)
	chk("user (ticks fallback)", st.CPUUserUsec, 1500000)
	chk("sys (ticks fallback)", st.CPUSystemUsec, 500000)
	chk("throttled", st.CPUThrottledUs, 5000)
	if st.PidsPeak != nil {
		t.Errorf("pids.peak absent but PidsPeak = %d", *st.PidsPeak)
	}
	// The counters alone: the same counts, and nothing else read.
	c := statsV1(readFile, dirs, Resources{Memory: 4096}, Counters)
	chk("counters: oom", c.OOMKills, 2)
	chk("counters: hits", c.PidsLimitHits, 4)
	chk("counters: throttled", c.CPUThrottledUs, 5000)
	if c.MemoryPeak != nil || c.MemoryLimit != nil || c.CPUUserUsec != nil || c.CPUSystemUsec != nil {
		t.Errorf("counters read more than the counters: %+v", c)
	}
}

// A v1 group's CPU time is cpuacct.usage (exact), split in the sampled
// proportion of usage_user/usage_sys, else of cpuacct.stat's ticks.
func TestStatsV1CPUFake(t *testing.T) {
	for _, c := range []struct {
		name      string
		files     map[string]string
		user, sys int64 // µs; -1: nil
	}{
		{"exact total split by the samples", map[string]string{"cpuacct.usage": "1000000000\n", "cpuacct.usage_user": "900000000\n", "cpuacct.usage_sys": "300000000\n", "cpuacct.stat": "user 90\nsystem 30\n"}, 750000, 250000},
		{"no usage_user: split by cpuacct.stat", map[string]string{"cpuacct.usage": "1000000000\n", "cpuacct.stat": "user 150\nsystem 50\n"}, 750000, 250000},
		{"no total: the samples as they are", map[string]string{"cpuacct.usage_user": "900000000\n", "cpuacct.usage_sys": "300000000\n"}, 900000, 300000},
		{"never sampled in system", map[string]string{"cpuacct.usage": "7000\n", "cpuacct.usage_user": "4000000\n", "cpuacct.usage_sys": "0\n"}, 7, 0},
		{"nothing to read", map[string]string{}, -1, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := statsV1(readFile, v1Dirs{"cpuacct": fakeDir(t, c.files)}, Resources{}, AllFigures)
			for _, v := range []struct {
				name string
				p    *int64
				want int64
			}{{"user", st.CPUUserUsec, c.user}, {"sys", st.CPUSystemUsec, c.sys}} {
				switch {
				case v.want < 0 && v.p != nil:
					t.Errorf("%s = %d, want nil", v.name, *v.p)
				case v.want >= 0 && (v.p == nil || *v.p != v.want):
					t.Errorf("%s = %s, want %d", v.name, fmtp(v.p), v.want)
				}
			}
		})
	}
}

func TestSplitCPU(t *testing.T) {
	for _, c := range []struct{ total, user, sys, wu, ws int64 }{
		{100, 3, 1, 75, 25},
		{100, 0, 0, 100, 0}, // nothing sampled: all user, as cputime_adjust
		{100, 0, 5, 0, 100},
		{100, 5, 0, 100, 0},
		{0, 3, 1, 3, 1},  // no total known: the samples stand
		{-1, 3, 1, 3, 1}, // nonsense total: likewise
		{101, 1, 1, 51, 50},
		// 30 CPU-days in ns: total*sys would overflow int64.
		{30 * 86400e9, 2, 1, 20 * 86400e9, 10 * 86400e9},
	} {
		u, s := splitCPU(c.total, c.user, c.sys)
		if u != c.wu || s != c.ws {
			t.Errorf("splitCPU(%d, %d, %d) = %d, %d; want %d, %d", c.total, c.user, c.sys, u, s, c.wu, c.ws)
		}
		if c.total > 0 && u+s != c.total {
			t.Errorf("splitCPU(%d, ...) parts sum to %d", c.total, u+s)
		}
	}
}

func TestCountersV2Fake(t *testing.T) {
	d := fakeDir(t, map[string]string{
		"memory.peak":   "104857600\n",
		"memory.events": "low 0\nhigh 0\nmax 9\noom 4\noom_kill 3\n",
		"pids.events":   "max 7\n",
		"cpu.stat":      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nthrottled_usec 4242\n",
	})
	c := (&v2Group{dir: d}).stats(Counters)
	for name, v := range map[string]struct {
		p    *int64
		want int64
	}{"oom": {c.OOMKills, 3}, "hits": {c.PidsLimitHits, 7}, "throttled": {c.CPUThrottledUs, 4242}} {
		if v.p == nil || *v.p != v.want {
			t.Errorf("%s = %s, want %d", name, fmtp(v.p), v.want)
		}
	}
	if c.MemoryPeak != nil || c.CPUUserUsec != nil {
		t.Errorf("counters read more than the counters: %+v", c)
	}
}

func TestStaleDirsFake(t *testing.T) {
	base := t.TempDir()
	own, _ := procStartTime(os.Getpid())
	ns := pidNS()
	liveOther := ownerName(1, mustStart(t, 1), ns) // pid 1 lives
	dead := ownerName(os.Getpid(), own+1, ns)      // our pid, other start: reused pid
	otherNS := ownerName(999999, 1, ns+1)          // another pid namespace: not ours to judge
	names := []string{selfName(), liveOther, dead, otherNS, "unrelated", "tooljail-bad"}
	for _, o := range []string{selfName(), liveOther, dead, otherNS} {
		names = append(names, flatRunName(o, "r1"))
	}
	for _, n := range names {
		os.Mkdir(filepath.Join(base, n), 0o755)
	}
	got := staleDirs(base, map[string]bool{})
	sort.Slice(got, func(i, j int) bool { return got[i].path < got[j].path })
	want := []staleDir{
		{path: filepath.Join(base, dead), owner: dead},
		{path: filepath.Join(base, flatRunName(dead, "r1")), owner: dead, run: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("staleDirs = %+v, want %+v", got, want)
	}
}

// A supervisor's name for itself is the name another supervisor reads of
// it, every time: else each judges the other dead and removes its groups.
// Under qemu-user (the arm64 unit tests) a read of /proc/<own pid>/stat by
// path gets an invented start time that moves between reads.
func TestOwnerNameAgreesWithOthers(t *testing.T) {
	c := exec.Command("/proc/self/exe")
	c.Env = append(os.Environ(), "TJCG_CHILD=ownname")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	sc := bufio.NewScanner(out)
	n := 0
	for ; n < 200 && sc.Scan(); n++ {
		start, err := procStartTime(c.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if theirs, ours := sc.Text(), ownerName(c.Process.Pid, start, pidNS()); theirs != ours {
			t.Fatalf("read %d: the child names itself %s, another process names it %s", n, theirs, ours)
		}
	}
	if n != 200 {
		t.Fatalf("the child printed %d names, want 200 (%v)", n, sc.Err())
	}
}

func mustStart(t *testing.T, pid int) uint64 {
	s, err := procStartTime(pid)
	if err != nil {
		t.Skip(fmt.Sprintf("cannot read /proc/%d/stat: %v", pid, err))
	}
	return s
}

// A v1 path that ends in this supervisor's own run groups (its leader
// thread joined one to fork an init) is cut back to its home; other
// supervisors' groups and other names stay.
func TestOutsideOwnRuns(t *testing.T) {
	self := "tooljail-1084-447172-4026531836"
	for _, c := range []struct{ in, want string }{
		{"/", "/"},
		{"/user.slice", "/user.slice"},
		{"/" + self + "-run-92936886bdb2f1f8", "/"},
		{"/a/b/" + self + "-run-1", "/a/b"},
		{"/a/" + self + "-run-1/" + self + "-run-2", "/a"},
		{"/a/tooljail-999-1-4026531836-run-1", "/a/tooljail-999-1-4026531836-run-1"},
		{"/a/" + self, "/a/" + self},
		{"/a/" + self + "-run-1/b", "/a/" + self + "-run-1/b"},
	} {
		if got := outsideOwnRuns(c.in, self); got != c.want {
			t.Errorf("outsideOwnRuns(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestStatZombie(t *testing.T) {
	for line, want := range map[string]bool{
		"42 (tooljail) Z 1 42 42 0 -1 4194564 0":   true,
		"42 (tooljail) X 1 42 42 0 -1 4194564 0":   true,
		"42 (tooljail) S 1 42 42 0 -1 4194564 0":   false,
		"42 (a) Z (b) R 1 42 42 0 -1 4194564 0":    false, // the last ')' ends comm
		"42 (tool jail)) Z 1 42 42 0 -1 4194564 0": true,
		"42 (tooljail)": false,
	} {
		if got := statZombie([]byte(line)); got != want {
			t.Errorf("statZombie(%q) = %v, want %v", line, got, want)
		}
	}
}

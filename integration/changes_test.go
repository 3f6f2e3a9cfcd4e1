package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The change sets of issue 30, driven through the CLI as users do: a run
// with --changes review leaves the host's workdir untouched and keeps what
// the command wrote (the upper layer of an overlay) as a change set that
// `tooljail changes` lists, shows, diffs, applies or discards.
//
// What the command saw is printed by the command itself at the end of its
// run (tjhelper manifest: paths, types, modes, sizes, sha256, link
// targets, hard links), and the host tree after an apply must be exactly
// that. The same manifest taken on the host before and after a review run,
// inodes and times included, proves the host untouched.

// changesReport is the report's "changes" block (changes.Report), decoded
// by its JSON names: a renamed field fails here.
type changesReport struct {
	Mode      string          `json:"mode"`
	Recorded  bool            `json:"recorded"`
	Reason    string          `json:"reason"`
	ID        string          `json:"id"`
	State     string          `json:"state"`
	Entries   []changeEntry   `json:"entries"`
	Totals    map[string]int  `json:"totals"`
	Truncated bool            `json:"truncated"`
	Conflicts []changeProblem `json:"conflicts"`
	Error     string          `json:"error"`
}

type changeEntry struct {
	Bind      string `json:"bind"`
	Path      string `json:"path"`
	Kind      string `json:"kind"`
	Type      string `json:"type"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256,omitempty"`
	Mode      string `json:"mode,omitempty"`
	Target    string `json:"target,omitempty"`
	Link      string `json:"link,omitempty"`
	Protected bool   `json:"protected,omitempty"`
	Skipped   string `json:"skipped,omitempty"`
}

type changeProblem struct {
	Bind string `json:"bind"`
	Path string `json:"path"`
	Why  string `json:"why"`
}

// manifestEntry is one line of `tjhelper manifest`.
type manifestEntry struct {
	Path    string `json:"path"`
	Type    string `json:"type"`
	Mode    string `json:"mode"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Target  string `json:"target"`
	Link    string `json:"link"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Ino     uint64 `json:"ino"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
}

// view is what a command sees of an entry: no inode, owner or time.
func (e manifestEntry) view() string {
	return fmt.Sprintf("%q %s %s size=%d sha256=%s target=%q link=%q", e.Path, e.Type, e.Mode, e.Size, e.SHA256, e.Target, e.Link)
}

// full is the entry with inode and times: "untouched" compares these.
func (e manifestEntry) full() string {
	return fmt.Sprintf("%s uid=%d gid=%d ino=%d mtime=%d ctime=%d", e.view(), e.UID, e.GID, e.Ino, e.MtimeNs, e.CtimeNs)
}

// hostManifest is the manifest of dir taken on the host (the helper's
// manifest action only reads). Its output is read through runPiped, within a
// deadline: a 6.12 guest's suite once hung here for minutes in os/exec's
// Output, the helper gone, because another test's double close had closed
// the pipe's read end under it (runCgroup.release).
func hostManifest(t *testing.T, dir string) []manifestEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute*slow)
	defer cancel()
	out, stderr, held, err := runPiped(ctx, t, exec.CommandContext(ctx, helperBin, "manifest", dir))
	if len(held) > 0 {
		t.Fatalf("tjhelper manifest %s exited (%v), but these processes still hold its stdout or stderr:\n%s", dir, err, strings.Join(held, "\n"))
	}
	if err != nil {
		t.Fatalf("tjhelper manifest %s: %v\n%s", dir, err, stderr)
	}
	return parseManifest(t, out)
}

func parseManifest(t *testing.T, out string) []manifestEntry {
	t.Helper()
	var m []manifestEntry
	line := strings.TrimSpace(out)
	if i := strings.LastIndex(line, "\nvalue "); i >= 0 {
		line = line[i+1:]
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "value ")), &m); err != nil {
		t.Fatalf("manifest: %v: %q", err, trunc(out))
	}
	return m
}

// diffManifests lists the differences of a and b by key (view or full).
func diffManifests(a, b []manifestEntry, key func(manifestEntry) string) []string {
	am, bm := map[string]string{}, map[string]string{}
	for _, e := range a {
		am[e.Path] = key(e)
	}
	for _, e := range b {
		bm[e.Path] = key(e)
	}
	var d []string
	for p, v := range am {
		if w, ok := bm[p]; !ok {
			d = append(d, "only before: "+v)
		} else if v != w {
			d = append(d, "was: "+v+"\n   now: "+w)
		}
	}
	for p, w := range bm {
		if _, ok := am[p]; !ok {
			d = append(d, "only after: "+w)
		}
	}
	sort.Strings(d)
	return d
}

func sameTree(t *testing.T, what string, a, b []manifestEntry, key func(manifestEntry) string) bool {
	t.Helper()
	if d := diffManifests(a, b, key); len(d) > 0 {
		if len(d) > 30 {
			d = append(d[:30], fmt.Sprintf("... %d more", len(d)-30))
		}
		t.Errorf("%s:\n  %s", what, strings.Join(d, "\n  "))
		return false
	}
	return true
}

// changesStore is a directory owned by u (the caller, not the workdir's
// owner) whose missing child "changes" the store is made in: below
// TJ_CHANGES_BASE when set (the VM guests' scratch file system with
// user.* xattrs, which their tmpfs lacks before Linux 6.6).
func (u *user) changesStore(t *testing.T) string {
	t.Helper()
	at := base
	if b := os.Getenv("TJ_CHANGES_BASE"); b != "" {
		at = b
	}
	d, err := os.MkdirTemp(at, "store-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chown(d, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(d, "changes")
}

// changesCmd runs `tooljail changes ARGS... --changes-dir store` as u.
func (u *user) changesCmd(t *testing.T, store string, args ...string) *outcome {
	t.Helper()
	return u.exec(t, run{args: append(append([]string{"changes"}, args...), "--changes-dir", store), timeout: 5 * time.Minute})
}

// changesOf is the report's changes block; it fails the test when absent.
func changesOf(t *testing.T, o *outcome) *changesReport {
	t.Helper()
	var r struct {
		Changes *changesReport `json:"changes"`
	}
	if o.noReport || json.Unmarshal(o.reportRaw, &r) != nil || r.Changes == nil {
		t.Fatalf("no changes block in the report\n%s", o)
	}
	return r.Changes
}

// skipWithoutOverlay skips where the mode cannot work at all: a host
// without user namespaces (TestChangesUnavailable covers it there).
func skipWithoutOverlay(t *testing.T) {
	t.Helper()
	if hostNoUserNS {
		t.Skip("no user namespaces here: TestChangesUnavailable checks that review fails closed")
	}
}

// changeSeed is the host workdir before the run; changeScript is what the
// command does to it, one kind of change per line; changeWant the report
// entries it makes (path, kind, type, link).
var changeSeed = map[string]string{
	"keep.txt":       "keep\n",
	"mod.txt":        "old\n",
	"trunc.txt":      "to be truncated\n",
	"del.txt":        "gone\n",
	"ren-src.txt":    "renamed\n",
	"rmdir-d/":       "",
	"rmtree/a":       "a\n",
	"rmtree/b/c":     "c\n",
	"chmod.sh":       "#!/bin/sh\n",
	"f2d":            "a file, then a directory\n",
	"d2f/child":      "a directory, then a file\n",
	"old-link":       "-> keep.txt",
	"opq/old1":       "1\n",
	"opq/old2":       "2\n",
	"mvd-src/x":      "x\n",
	"sub/deep.txt":   "deep\n",
	"sub/other.txt":  "other\n",
	"sub/sub2/z.txt": "z\n",
}

// changeScript is a format: its %d is bigSize().
const changeScript = `set -e
printf 'new line\n' >> mod.txt
: > trunc.txt
rm del.txt
mv ren-src.txt ren-dst.txt
rmdir rmdir-d
rm -r rmtree
chmod 0755 chmod.sh
rm f2d && mkdir f2d && printf 'inner\n' > f2d/inner
rm -r d2f && printf 'now a file\n' > d2f
ln -s keep.txt link
rm old-link && ln -s mod.txt old-link
mkdir newdir && printf 'n\n' > newdir/file
printf 'hard\n' > hl-a && ln hl-a hl-b
./tjhelper write big %d >/dev/null
dd if=/dev/zero of=sparse bs=1 count=1 seek=16777215 2>/dev/null
head -c 64 /dev/zero > bin.dat
printf 'nl\n' > "$(printf 'nl\nname')"
rm -r opq && mkdir opq && printf 'o\n' > opq/new
mv mvd-src mvd-dst
printf 'deeper\n' >> sub/deep.txt
mkfifo fifo
exec ./tjhelper manifest .
`

// bigSize is the size of changeScript's large file: on the host 100 MiB,
// above changes.HashLimit (64 MiB), so that the set records it unhashed and
// compares it byte by byte. That path is the same on every kernel and the
// changes package's TestScanBigFiles covers it too; in the emulated guests,
// where writing, hashing and copying 100 MiB several times was most of this
// test's time (21.4 s alone in a 6.12 guest, 5.4 s with 2 MiB), the file is
// 2 MiB and every other change is the same.
func bigSize() int {
	if os.Getenv("TJ_VM") == "1" {
		return 2 << 20
	}
	return 100 << 20
}

var changeWant = []struct{ path, kind, typ, link string }{
	{"big", "created", "file", ""},
	{"bin.dat", "created", "file", ""},
	{"chmod.sh", "mode_changed", "file", ""},
	{"d2f", "type_changed", "file", ""},
	{"del.txt", "deleted", "file", ""},
	{"f2d", "type_changed", "dir", ""},
	{"f2d/inner", "created", "file", ""},
	{"fifo", "created", "fifo", ""},
	{"hl-a", "created", "file", ""},
	{"hl-b", "created", "file", "hl-a"},
	{"link", "symlink", "symlink", ""},
	{"mod.txt", "modified", "file", ""},
	{"mvd-dst", "created", "dir", ""},
	{"mvd-dst/x", "created", "file", ""},
	{"mvd-src", "deleted", "dir", ""},
	{"newdir", "created", "dir", ""},
	{"newdir/file", "created", "file", ""},
	{"nl\nname", "created", "file", ""},
	{"old-link", "symlink", "symlink", ""},
	{"opq/new", "created", "file", ""},
	{"opq/old1", "deleted", "file", ""},
	{"opq/old2", "deleted", "file", ""},
	{"ren-dst.txt", "created", "file", ""},
	{"ren-src.txt", "deleted", "file", ""},
	{"rmdir-d", "deleted", "dir", ""},
	{"rmtree", "deleted", "dir", ""},
	{"sparse", "created", "file", ""},
	{"sub/deep.txt", "modified", "file", ""},
	{"trunc.txt", "modified", "file", ""},
}

// seedChanges lays out changeSeed in a new workdir of u.
func seedChanges(t *testing.T, u *user) string {
	t.Helper()
	w := u.workdir(t)
	privateHelper(t, w, u.dirUID, u.dirGID)
	makeTree(t, u, w, changeSeed)
	// makeTree writes 0755 files: the seed's are 0644 (chmod.sh changes).
	for rel, data := range changeSeed {
		if !strings.HasSuffix(rel, "/") && !strings.HasPrefix(data, "-> ") {
			if err := os.Chmod(filepath.Join(w, rel), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// privateHelper makes w's tjhelper a copy of its own: the workdir's is a
// hard link of one every test shares, whose ctime and owner other tests'
// chowns change while a test checks its workdir untouched.
func privateHelper(t *testing.T, w string, uid, gid int) {
	t.Helper()
	p := filepath.Join(w, "tjhelper")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(helperBin, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		t.Fatal(err)
	}
}

// wantEntries are the entries the report must list for changeScript run
// in w (seen before the run as before), given what the command saw.
func wantEntries(w string, before, seen []manifestEntry) []changeEntry {
	was, now := map[string]manifestEntry{}, map[string]manifestEntry{}
	for _, e := range before {
		was[e.Path] = e
	}
	for _, e := range seen {
		now[e.Path] = e
	}
	var l []changeEntry
	for _, c := range changeWant {
		e := changeEntry{Bind: w, Path: c.path, Kind: c.kind, Type: c.typ, Link: c.link}
		if c.kind == "deleted" {
			if b, ok := was[c.path]; ok {
				e.Type = b.Type
			}
		} else {
			n := now[c.path]
			e.Mode, e.Target = n.Mode, n.Target
			if n.Type == "file" {
				e.Size = n.Size
				if n.Size <= 64<<20 {
					e.SHA256 = n.SHA256
				}
			}
		}
		l = append(l, e)
	}
	sort.Slice(l, func(i, j int) bool { return l[i].Path < l[j].Path })
	return l
}

// checkEntries compares the report's entries with want; Skipped is only
// checked for being set on special files (its text is free).
func checkEntries(t *testing.T, got, want []changeEntry) {
	t.Helper()
	norm := func(l []changeEntry) []string {
		var s []string
		for _, e := range l {
			skipped := e.Skipped != ""
			e.Skipped = ""
			b, _ := json.Marshal(e)
			s = append(s, fmt.Sprintf("%s skipped=%v", b, skipped))
		}
		return s
	}
	for i := range want {
		if want[i].Type == "fifo" {
			want[i].Skipped = "a special file"
		}
	}
	g, w := norm(got), norm(want)
	if !slices.Equal(g, w) {
		var d []string
		for _, x := range w {
			if !slices.Contains(g, x) {
				d = append(d, "missing: "+x)
			}
		}
		for _, x := range g {
			if !slices.Contains(w, x) {
				d = append(d, "unexpected: "+x)
			}
		}
		if len(d) == 0 {
			d = append(d, "the same entries, not sorted by path")
		}
		t.Errorf("report entries:\n  %s", strings.Join(d, "\n  "))
	}
}

// reviewRun runs script in w with --changes review and returns the
// outcome, its changes block and the manifest the command printed last.
func reviewRun(t *testing.T, u *user, w, store, mode, script string) (*outcome, *changesReport, []manifestEntry) {
	t.Helper()
	o := u.jailRun(t, w, run{args: []string{"--changes", mode, "--changes-dir", store}, timeout: 5 * time.Minute}, "/bin/sh", "-c", script)
	c := changesOf(t, o)
	var seen []manifestEntry
	if strings.Contains(o.stdout, "value ") {
		seen = parseManifest(t, o.stdout)
	}
	return o, c, seen
}

// withoutSkipped drops the special files apply does not write.
func withoutSkipped(m []manifestEntry, c *changesReport) []manifestEntry {
	skip := map[string]bool{}
	for _, e := range c.Entries {
		if e.Skipped != "" {
			skip[e.Path] = true
		}
	}
	var l []manifestEntry
	for _, e := range m {
		if !skip[e.Path] {
			l = append(l, e)
		}
	}
	return l
}

// Every kind of change in review: the report lists exactly what the
// command changed, the host's workdir is untouched (inodes and times
// too), show and diff give the set, and apply makes the host exactly what
// the command saw: special files aside, sparse files stay sparse, and
// every path the set wrote belongs to who the bind writes as.
func TestChangesReviewApply(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		w := seedChanges(t, u)
		store := u.changesStore(t)
		before := hostManifest(t, w)
		o, c, seen := reviewRun(t, u, w, store, "review", fmt.Sprintf(changeScript, bigSize()))
		if o.code != 0 || seen == nil {
			t.Fatalf("want exit 0 and the command's manifest\n%s", o)
		}
		sameTree(t, "review changed the host's workdir", before, hostManifest(t, w), manifestEntry.full)
		if c.Mode != "review" || !c.Recorded || c.State != "kept" || len(c.ID) != 32 || c.Truncated || c.Reason != "" {
			t.Errorf("changes block: mode %q recorded %v state %q id %q truncated %v reason %q", c.Mode, c.Recorded, c.State, c.ID, c.Truncated, c.Reason)
		}
		want := wantEntries(w, before, seen)
		checkEntries(t, c.Entries, want)
		counts := map[string]int{}
		for _, e := range want {
			counts[e.Kind]++
		}
		for _, k := range []string{"created", "modified", "deleted", "type_changed", "mode_changed", "symlink"} {
			if c.Totals[k] != counts[k] {
				t.Errorf("totals.%s = %d, want %d (%v)", k, c.Totals[k], counts[k], c.Totals)
			}
		}
		if c.Totals["entries"] != len(want) || c.Totals["bytes"] < bigSize() {
			t.Errorf("totals %v: want %d entries and at least the large file's %d bytes", c.Totals, len(want), bigSize())
		}
		if c.ID == "" {
			t.FailNow()
		}
		// The store is private: 0700, the caller's.
		for _, d := range []string{store, filepath.Join(store, c.ID)} {
			var st unix.Stat_t
			if err := unix.Stat(d, &st); err != nil || st.Mode&0o777 != 0o700 || int(st.Uid) != u.uid {
				t.Errorf("%s: mode %o owner %d (%v), want 0700 and uid %d", d, st.Mode&0o777, st.Uid, err, u.uid)
			}
		}

		// list, show and diff name the set and its entries.
		l := u.changesCmd(t, store, "list", "--json")
		if l.code != 0 || !strings.Contains(l.stdout, c.ID) {
			t.Errorf("changes list --json does not list %s\n%s", c.ID, l)
		}
		s := u.changesCmd(t, store, "show", c.ID, "--json")
		var set struct {
			ID      string        `json:"id"`
			State   string        `json:"state"`
			Changes []changeEntry `json:"changes"`
		}
		if s.code != 0 || json.Unmarshal([]byte(s.stdout), &set) != nil || set.ID != c.ID || set.State != "kept" {
			t.Errorf("changes show %s --json: want the set, kept\n%s", c.ID, s)
		} else {
			checkEntries(t, set.Changes, want)
		}
		d := u.changesCmd(t, store, "diff", c.ID, "mod.txt")
		if d.code != 0 || !strings.Contains(d.stdout, "\n+new line\n") || !strings.Contains(d.stdout, "\n old\n") {
			t.Errorf("changes diff %s mod.txt: want a unified diff adding \"new line\" after \"old\"\n%s", c.ID, d)
		}
		for _, p := range []string{"bin.dat", "sparse"} {
			// Binary, and too large to compare by lines: one line each.
			d = u.changesCmd(t, store, "diff", c.ID, p)
			if d.code != 0 || strings.Count(strings.TrimRight(d.stdout, "\n"), "\n") != 0 || !strings.Contains(d.stdout, p+" differ") ||
				p == "bin.dat" && !strings.HasPrefix(d.stdout, "Binary files") {
				t.Errorf("changes diff %s %s: want one line saying it differs\n%s", c.ID, p, d)
			}
		}

		a := u.changesCmd(t, store, "apply", c.ID)
		if a.code != 0 {
			t.Fatalf("changes apply: want exit 0\n%s", a)
		}
		after := hostManifest(t, w)
		sameTree(t, "after apply, the host is not what the command saw", withoutSkipped(seen, c), after, manifestEntry.view)
		written := map[string]bool{}
		for _, e := range c.Entries {
			written[e.Path] = e.Kind != "deleted"
		}
		for _, e := range after {
			if written[e.Path] && (int(e.UID) != u.dirUID || int(e.GID) != u.dirGID) {
				t.Errorf("%q: owner %d:%d after apply, want %d:%d (the bind's)", e.Path, e.UID, e.GID, u.dirUID, u.dirGID)
			}
		}
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(w, "sparse"), &st); err != nil || st.Blocks*512 > 1<<20 {
			t.Errorf("sparse: %d bytes allocated after apply (%v), want the hole kept", st.Blocks*512, err)
		}
		s = u.changesCmd(t, store, "show", c.ID, "--json")
		if s.code != 0 || json.Unmarshal([]byte(s.stdout), &set) != nil || set.State != "applied" {
			t.Errorf("changes show after apply: want state applied\n%s", s)
		}
	})
}

// Discard leaves nothing: the set is gone from the store and from the
// list, and the project is as it was, inodes and times included.
func TestChangesDiscard(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		w := seedChanges(t, u)
		store := u.changesStore(t)
		before := hostManifest(t, w)
		o, c, _ := reviewRun(t, u, w, store, "review", "printf x >> mod.txt; rm del.txt; mkdir n; echo y > n/y")
		if o.code != 0 || c.ID == "" || c.State != "kept" || len(c.Entries) != 4 {
			t.Fatalf("want exit 0 and a kept set of 4 entries\n%s", o)
		}
		x := u.changesCmd(t, store, "discard", c.ID)
		if x.code != 0 {
			t.Fatalf("changes discard: want exit 0\n%s", x)
		}
		if _, err := os.Lstat(filepath.Join(store, c.ID)); !os.IsNotExist(err) {
			t.Errorf("%s/%s still exists after discard (%v)", store, c.ID, err)
		}
		if l := u.changesCmd(t, store, "list", "--json"); l.code != 0 || strings.Contains(l.stdout, c.ID) {
			t.Errorf("changes list after discard\n%s", l)
		}
		if a := u.changesCmd(t, store, "apply", c.ID); a.code == 0 || !strings.Contains(a.stderr, c.ID) {
			t.Errorf("apply of a discarded set: want an error naming it\n%s", a)
		}
		sameTree(t, "review then discard changed the host", before, hostManifest(t, w), manifestEntry.full)
		// An id that is not 32 lowercase hex digits is refused as such.
		for _, bad := range []string{"../" + c.ID, strings.ToUpper(c.ID), c.ID[:31]} {
			if a := u.changesCmd(t, store, "apply", bad); a.code != 125 {
				t.Errorf("apply %q: want exit 125\n%s", bad, a)
			}
		}
	})
}

// Someone edits (or creates) a path of the set after the run: apply
// applies nothing, exits 1 and names each conflict; --force applies.
func TestChangesConflict(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		w := seedChanges(t, u)
		store := u.changesStore(t)
		o, c, seen := reviewRun(t, u, w, store, "review", "printf 'jail\\n' >> mod.txt; printf 'new\\n' > new.txt; printf 'k\\n' > keep2.txt; rm del.txt; exec ./tjhelper manifest .")
		if o.code != 0 || c.ID == "" || len(c.Entries) != 4 {
			t.Fatalf("want exit 0 and a set of 4 entries\n%s", o)
		}
		// The user edits mod.txt and creates new.txt meanwhile.
		writeFile(t, filepath.Join(w, "mod.txt"), "old\nthe user's\n", 0o644)
		writeFile(t, filepath.Join(w, "new.txt"), "the user's\n", 0o644)
		os.Lchown(filepath.Join(w, "new.txt"), u.dirUID, u.dirGID)
		os.Lchown(filepath.Join(w, "mod.txt"), u.dirUID, u.dirGID)
		edited := hostManifest(t, w)
		a := u.changesCmd(t, store, "apply", c.ID, "--json")
		if a.code != 1 {
			t.Fatalf("apply with conflicts: want exit 1\n%s", a)
		}
		var res struct {
			Conflicts []changeProblem `json:"conflicts"`
		}
		if err := json.Unmarshal([]byte(a.stdout), &res); err != nil {
			t.Errorf("apply --json with conflicts: %v\n%s", err, a)
		}
		var named []string
		for _, p := range res.Conflicts {
			named = append(named, p.Path)
			if p.Bind != w || p.Why == "" {
				t.Errorf("conflict %+v: want bind %s and a reason", p, w)
			}
		}
		sort.Strings(named)
		if !slices.Equal(named, []string{"mod.txt", "new.txt"}) {
			t.Errorf("conflicts %v, want mod.txt and new.txt\n%s", named, a)
		}
		sameTree(t, "an apply with conflicts wrote", edited, hostManifest(t, w), manifestEntry.full)
		a = u.changesCmd(t, store, "apply", c.ID)
		if a.code != 1 || !strings.Contains(a.stdout+a.stderr, "mod.txt") || !strings.Contains(a.stdout+a.stderr, "new.txt") {
			t.Errorf("apply with conflicts (text): want exit 1 naming mod.txt and new.txt\n%s", a)
		}
		a = u.changesCmd(t, store, "apply", c.ID, "--force")
		if a.code != 0 {
			t.Fatalf("apply --force: want exit 0\n%s", a)
		}
		sameTree(t, "after apply --force, the host is not what the command saw", seen, hostManifest(t, w), manifestEntry.view)
	})
}

// A directory the set writes into is replaced, after the run, by a
// symlink to a directory outside the workdir (and, in a second set, the
// workdir itself): apply refuses, with --force too, and nothing is
// written outside, nor in the project.
func TestChangesSymlinkPlanted(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		store := u.changesStore(t)
		outside := u.dir(t)
		for _, plant := range []string{"sub", "newdir", "."} {
			name := map[string]string{".": "workdir"}[plant]
			if name == "" {
				name = plant
			}
			t.Run(name, func(t *testing.T) {
				w := seedChanges(t, u)
				o, c, _ := reviewRun(t, u, w, store, "review", "printf 'in\\n' > sub/x; printf 'z\\n' >> sub/sub2/z.txt; mkdir newdir; printf 'n\\n' > newdir/n")
				if o.code != 0 || c.ID == "" {
					t.Fatalf("want exit 0 and a set\n%s", o)
				}
				victim := filepath.Join(w, plant)
				if plant == "." {
					victim = w
				}
				moved := victim + ".orig"
				if plant == "newdir" {
					// newdir did not exist: the attacker makes it a symlink.
					moved = ""
				} else if err := os.Rename(victim, moved); err != nil {
					t.Fatal(err)
				}
				if plant == "." {
					defer os.RemoveAll(moved)
				}
				if err := os.Symlink(outside, victim); err != nil {
					t.Fatal(err)
				}
				os.Lchown(victim, u.dirUID, u.dirGID)
				var project []manifestEntry
				if plant != "." {
					project = hostManifest(t, w)
				}
				for _, force := range []bool{false, true} {
					args := []string{"apply", c.ID}
					if force {
						args = append(args, "--force")
					}
					a := u.changesCmd(t, store, args...)
					if ents, _ := os.ReadDir(outside); len(ents) != 0 {
						t.Fatalf("apply (force %v) wrote outside the workdir: %v\n%s", force, ents, a)
					}
					if plant == "newdir" && force {
						// newdir is an entry of the set, created since the
						// run: --force may replace the symlink by the set's
						// directory, never write through it.
						if fi, err := os.Lstat(victim); a.code == 0 && (err != nil || !fi.IsDir()) {
							t.Errorf("apply --force succeeded but newdir is not the set's directory (%v)\n%s", err, a)
						}
						continue
					}
					if a.code == 0 {
						t.Errorf("apply (force %v) through a planted symlink: want a refusal\n%s", force, a)
					}
					if project != nil {
						sameTree(t, fmt.Sprintf("apply (force %v) refused but wrote", force), project, hostManifest(t, w), manifestEntry.full)
					}
				}
			})
		}
	})
}

// A change set is its user's: uid 65534 can neither list, show, diff,
// apply nor discard root's (its store is root's and 0700: refused, named),
// and root's store refuses a directory of another user, as another
// unprivileged user's store refuses uid 65534's.
func TestChangesOtherUser(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as two users")
	}
	skipWithoutOverlay(t)
	t.Parallel()
	root := users[0]
	w := seedChanges(t, root)
	store := root.changesStore(t)
	o, c, _ := reviewRun(t, root, w, store, "review", "printf 'root\\n' > mine.txt")
	if o.code != 0 || c.ID == "" {
		t.Fatalf("want exit 0 and a set\n%s", o)
	}
	before := hostManifest(t, w)
	nobody := &user{name: "uid65534", uid: 65534, gid: 65534, cred: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	other := &user{name: "uid65533", uid: 65533, gid: 65533, cred: &syscall.Credential{Uid: 65533, Gid: 65533, Groups: []uint32{}}}
	own := nobody.changesStore(t)
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"show", c.ID}, {"show", c.ID, "--json"}, {"diff", c.ID}, {"apply", c.ID}, {"apply", c.ID, "--force"}, {"discard", c.ID}} {
		x := nobody.changesCmd(t, store, args...)
		if x.code != 125 || strings.Contains(x.stdout, "mine.txt") || !strings.Contains(x.stderr, store) {
			t.Errorf("uid 65534 %v in root's store: want exit 125 naming the store, nothing of the set\n%s", args, x)
		}
		x = nobody.changesCmd(t, own, args...)
		if x.code == 0 && args[0] != "list" || strings.Contains(x.stdout, "mine.txt") {
			t.Errorf("uid 65534 %v in its own store: root's set must be unknown there\n%s", args, x)
		}
	}
	sameTree(t, "another user's attempts changed root's project", before, hostManifest(t, w), manifestEntry.full)
	if _, err := os.Stat(filepath.Join(store, c.ID, "set.json")); err != nil {
		t.Errorf("root's set is gone: %v", err)
	}
	// Root is refused another user's store as anyone is: it must not
	// act on (or make files in) a directory another user controls.
	if x := nobody.changesCmd(t, own, "list"); x.code != 0 {
		t.Fatalf("uid 65534 list in its own store: want exit 0\n%s", x)
	}
	if x := root.changesCmd(t, own, "list"); x.code != 125 || !strings.Contains(x.stderr, own) {
		t.Errorf("root in uid 65534's store: want exit 125 naming it\n%s", x)
	}
	if x := other.changesCmd(t, own, "list"); x.code != 125 {
		t.Errorf("uid 65533 in uid 65534's store: want exit 125\n%s", x)
	}
	// A store open to others is refused, whoever's it is.
	if err := os.Chmod(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if x := nobody.changesCmd(t, own, "list"); x.code != 125 || !strings.Contains(x.stderr, own) {
		t.Errorf("uid 65534's store made 0755: want exit 125 naming it\n%s", x)
	}
}

// record applies the run's writes at its end, whatever the exit code, and
// lists them; apply-on-success applies when the command exited 0 and keeps
// the set otherwise (the run's exit code is the command's).
func TestChangesRecordApplyOnSuccess(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		store := u.changesStore(t)
		script := func(code int) string {
			return fmt.Sprintf("printf 'x\\n' >> mod.txt; rm del.txt; mkdir d; printf 'y\\n' > d/y; ./tjhelper manifest .; exit %d", code)
		}
		wantPaths := []string{"d", "d/y", "del.txt", "mod.txt"}
		for _, tc := range []struct {
			mode    string
			code    int
			applied bool
		}{
			{"record", 0, true}, {"record", 3, true},
			{"apply-on-success", 0, true}, {"apply-on-success", 3, false},
		} {
			t.Run(fmt.Sprintf("%s-%d", tc.mode, tc.code), func(t *testing.T) {
				w := seedChanges(t, u)
				before := hostManifest(t, w)
				o, c, seen := reviewRun(t, u, w, store, tc.mode, script(tc.code))
				if o.code != tc.code || seen == nil {
					t.Fatalf("want exit %d and the command's manifest\n%s", tc.code, o)
				}
				var paths []string
				for _, e := range c.Entries {
					paths = append(paths, e.Path)
				}
				if c.Mode != tc.mode || !c.Recorded || !slices.Equal(paths, wantPaths) {
					t.Errorf("changes block: mode %q recorded %v entries %q, want %s, true, %q", c.Mode, c.Recorded, paths, tc.mode, wantPaths)
				}
				host := hostManifest(t, w)
				if tc.applied {
					if c.State != "applied" {
						t.Errorf("state %q, want applied", c.State)
					}
					sameTree(t, "the host is not what the command saw", seen, host, manifestEntry.view)
					return
				}
				if c.State != "kept" || c.ID == "" {
					t.Errorf("state %q id %q, want kept with an id", c.State, c.ID)
				}
				sameTree(t, "a failed apply-on-success run changed the host", before, host, manifestEntry.full)
				if a := u.changesCmd(t, store, "apply", c.ID); a.code != 0 {
					t.Fatalf("apply of the kept set: want exit 0\n%s", a)
				}
				sameTree(t, "after apply, the host is not what the command saw", seen, hostManifest(t, w), manifestEntry.view)
			})
		}
	})
}

// Where overlayfs in a user namespace cannot be had (here: the mode
// without namespaces, in an emulated container or on a host that refuses
// user namespaces), review and apply-on-success fail closed with exit 125
// and the reason, the command never running; record runs as off and says
// it could not record.
func TestChangesUnavailable(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		w, _, _ := noNSDirs(t, u)
		uid, gid := noNSOwner(u)
		privateHelper(t, w, uid, gid)
		writeFile(t, filepath.Join(w, "mod.txt"), "old\n", 0o644)
		os.Chown(filepath.Join(w, "mod.txt"), uid, gid)
		store := u.changesStore(t)
		before := hostManifest(t, w)
		for _, mode := range []string{"review", "apply-on-success"} {
			o := u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces", "--changes", mode, "--changes-dir", store}, wrap: noNSWrap},
				"/bin/sh", "-c", "printf 'ran\\n' >> mod.txt")
			if o.code == 125 && strings.Contains(o.stderr, "tjhelper _container") {
				t.Skipf("the emulated container cannot start here: %s", o.stderr)
			}
			if o.code != 125 || !strings.Contains(o.stderr, "overlay") {
				t.Errorf("--changes %s without namespaces: want exit 125 and the reason (overlay)\n%s", mode, o)
			}
			sameTree(t, "a refused "+mode+" run changed the host", before, hostManifest(t, w), manifestEntry.full)
		}
		o := u.jailRun(t, w, run{args: []string{"--allow-degraded", "namespaces", "--changes", "record", "--changes-dir", store}, wrap: noNSWrap},
			"/bin/sh", "-c", "printf 'ran\\n' >> mod.txt")
		if o.code != 0 {
			t.Fatalf("record without namespaces: want exit 0 (it runs as off)\n%s", o)
		}
		c := changesOf(t, o)
		if c.Mode != "record" || c.Recorded || c.Reason == "" || c.ID != "" {
			t.Errorf("record without namespaces: mode %q recorded %v reason %q id %q, want recorded false with a reason", c.Mode, c.Recorded, c.Reason, c.ID)
		}
		if b, _ := os.ReadFile(filepath.Join(w, "mod.txt")); string(b) != "old\nran\n" {
			t.Errorf("record without namespaces: mod.txt %q, want the command's write", b)
		}
	})
}

// startChanges starts `tooljail changes ARGS... --changes-dir store` as u
// without waiting: the killed-apply test kills it.
func (u *user) startChanges(t *testing.T, store string, args ...string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(tooljailBin, append(append([]string{"changes"}, args...), "--changes-dir", store)...)
	cmd.Dir = base
	cmd.Env = u.environ(nil)
	rc, err := u.newRunCgroup()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, UseCgroupFD: rc.fd >= 0, CgroupFD: rc.fd}
	if err := cmd.Start(); err != nil {
		rc.release()
		t.Fatal(err)
	}
	return cmd, rc.release
}

// firstWrite returns a channel closed at the first change inotify sees in
// dir (a file created, written, renamed, removed, its attributes set).
func firstWrite(t *testing.T, dir string) (<-chan struct{}, func()) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MODIFY|unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_DELETE|unix.IN_ATTRIB|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer unix.Close(fd)
		for {
			select {
			case <-quit:
				return
			default:
			}
			p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(p, 50); n > 0 {
				close(done)
				<-quit
				return
			}
		}
	}()
	return done, func() { close(quit) }
}

// An apply killed (SIGKILL) once it has started writing the project: the
// next `changes` call (list) finishes or rolls it back, and the project
// is then one of the two whole states, the one before the apply or what
// the command saw, with no temporary file left; a rolled-back set still
// applies. The kill must land mid-way at least once (a project that is
// neither state before the recovery), else the test proves nothing.
func TestChangesApplyKilled(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		store := u.changesStore(t)
		const files = 300
		seed := map[string]string{}
		for i := 0; i < files; i++ {
			seed[fmt.Sprintf("f%03d", i)] = strings.Repeat(fmt.Sprintf("%d ", i), 8<<10)
		}
		script := fmt.Sprintf(`set -e
i=0; while [ $i -lt %d ]; do f=$(printf 'f%%03d' $i); printf 'jail\n' >> $f; printf 'new\n' > n$f; i=$((i+1)); done
exec ./tjhelper manifest .`, files)
		var w, id string
		var before, seen []manifestEntry
		fresh := true
		partial := 0
		for attempt := 0; attempt < 8 && partial == 0; attempt++ {
			if fresh {
				w = u.workdir(t)
				privateHelper(t, w, u.dirUID, u.dirGID)
				makeTree(t, u, w, seed)
				before = hostManifest(t, w)
				o, c, m := reviewRun(t, u, w, store, "review", script)
				if o.code != 0 || c.ID == "" || len(c.Entries) != 2*files || m == nil {
					t.Fatalf("want exit 0, a set of %d entries and the command's manifest\n%s", 2*files, o)
				}
				id, seen, fresh = c.ID, m, false
			}
			wrote, stop := firstWrite(t, w)
			cmd, release := u.startChanges(t, store, "apply", id)
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
			select {
			case <-wrote:
				syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
				err = <-exited
			case err = <-exited:
			}
			stop()
			release()
			mid := hostManifest(t, w)
			if len(diffManifests(mid, before, manifestEntry.view)) > 0 && len(diffManifests(mid, seen, manifestEntry.view)) > 0 {
				partial++
			}
			t.Logf("attempt %d: apply ended with %v; project half-applied: %v", attempt, err, partial > 0)
			l := u.changesCmd(t, store, "list", "--json")
			if l.code != 0 {
				t.Fatalf("changes list after a killed apply: want exit 0 (it recovers)\n%s", l)
			}
			now := hostManifest(t, w)
			switch {
			case len(diffManifests(now, seen, manifestEntry.view)) == 0:
				fresh = true // finished: the next attempt needs a new set
			case len(diffManifests(now, before, manifestEntry.view)) == 0:
				// Rolled back, and nothing of the apply left: it applies.
				if attempt == 7 || partial > 0 {
					if a := u.changesCmd(t, store, "apply", id); a.code != 0 {
						t.Fatalf("apply after a rollback: want exit 0\n%s", a)
					}
					sameTree(t, "apply after a rollback", seen, hostManifest(t, w), manifestEntry.view)
				}
			default:
				sameTree(t, "after recovery the project is neither what it was nor what the command saw (what it was)", before, now, manifestEntry.view)
				sameTree(t, "(what the command saw)", seen, now, manifestEntry.view)
				t.FailNow()
			}
		}
		if partial == 0 {
			t.Errorf("no kill landed mid-way in 8 attempts: the recovery was not exercised")
		}
	})
}

// workdirOutsideTmp is a workdir of u below /var/tmp (or TJ_CHANGES_BASE):
// in the jail, /tmp is a tmpfs of its own that Landlock lets the command
// write, so a workdir below /tmp would hide an overlay that Landlock does
// not let the command write.
func (u *user) workdirOutsideTmp(t *testing.T) string {
	t.Helper()
	at := "/var/tmp"
	if b := os.Getenv("TJ_CHANGES_BASE"); b != "" {
		at = b
	}
	if strings.HasPrefix(at+"/", "/tmp/") {
		t.Fatalf("%s is below /tmp", at)
	}
	w, err := os.MkdirTemp(at, "tjit-changes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(w) })
	if err := os.Chmod(w, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(helperBin, filepath.Join(w, "tjhelper")); err != nil {
		t.Fatal(err)
	}
	// The VM guests' scratch file system (ext2) cannot be idmapped: a
	// root-owned workdir there would be refused, one of an unprivileged
	// owner needs no idmap (the jail runs as its owner).
	uid, gid := u.dirUID, u.dirGID
	if uid == 0 {
		uid, gid = 4242, 4242
	}
	for _, p := range []string{w, filepath.Join(w, "tjhelper")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// The command writes its workdir through the overlay wherever the
// workdir is (here outside /tmp, where only the workdir's own Landlock
// rule lets it write): existing files, new files, below directories;
// review keeps it all off the host and apply brings it.
func TestChangesWorkdirOutsideTmp(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		w := u.workdirOutsideTmp(t)
		var st syscall.Stat_t
		if err := syscall.Stat(w, &st); err != nil {
			t.Fatal(err)
		}
		makeTree(t, u, w, map[string]string{"top": "top\n", "d/f": "f\n", "gone": "g\n"})
		// makeTree gives the tree to u's directory owner: back to the
		// workdir's (workdirOutsideTmp).
		filepath.WalkDir(w, func(p string, _ fs.DirEntry, err error) error {
			if err == nil {
				os.Lchown(p, int(st.Uid), int(st.Gid))
			}
			return err
		})
		store := u.changesStore(t)
		before := hostManifest(t, w)
		o, c, seen := reviewRun(t, u, w, store, "review", "set -e; printf 'x\\n' >> top; printf 'x\\n' >> d/f; printf 'n\\n' > d/new; printf 'n\\n' > new; rm gone; mkdir nd; exec ./tjhelper manifest .")
		if o.code != 0 || seen == nil {
			t.Fatalf("review in %s: want exit 0 (every write allowed) and the command's manifest\n%s", w, o)
		}
		var paths []string
		for _, e := range c.Entries {
			paths = append(paths, e.Path)
		}
		if want := []string{"d/f", "d/new", "gone", "nd", "new", "top"}; !slices.Equal(paths, want) {
			t.Errorf("entries %q, want %q", paths, want)
		}
		sameTree(t, "review changed the host's workdir", before, hostManifest(t, w), manifestEntry.full)
		if a := u.changesCmd(t, store, "apply", c.ID); a.code != 0 {
			t.Fatalf("changes apply: want exit 0\n%s", a)
		}
		sameTree(t, "after apply, the host is not what the command saw", seen, hostManifest(t, w), manifestEntry.view)
	})
}

// A change store the run could write is refused before anything runs:
// otherwise the command could rewrite a kept set that its user applies
// later (here the store lies inside the workdir, a read-write bind).
func TestChangesStoreInsideBind(t *testing.T) {
	eachUser(t, func(t *testing.T, u *user) {
		skipWithoutOverlay(t)
		// Not below /tmp: the 6.1 guest's tmpfs has no user.* xattrs, which
		// would refuse the store for that reason first.
		w := u.workdirOutsideTmp(t)
		store := filepath.Join(w, ".tooljail-store", "changes")
		o := u.jailRun(t, w, run{args: []string{"--changes", "review", "--changes-dir", store}, timeout: 5 * time.Minute},
			"/bin/sh", "-c", "echo ran > ran.txt")
		if o.code != 125 || !strings.Contains(o.stderr, "lies inside") {
			t.Fatalf("a store inside the workdir: want exit 125 naming it\n%s", o)
		}
		if _, err := os.Lstat(filepath.Join(w, "ran.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the command ran: %v", err)
		}
	})
}

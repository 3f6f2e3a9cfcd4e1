package changes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// tree is a file tree to build: path -> spec. Specs: "file:CONTENT",
// "file0755:CONTENT", "dir", "dir0700", "link:TARGET", "fifo",
// "whiteout", "opaque" (a directory with overlay's opaque xattr),
// "hard:OTHER" (a hard link to OTHER, made after it).
type tree map[string]string

func (tr tree) build(t *testing.T, root string) {
	t.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(tr))
	for k := range tr {
		keys = append(keys, k)
	}
	// Parents first; hard links after their targets.
	slices.SortFunc(keys, func(a, b string) int {
		ha, hb := strings.HasPrefix(tr[a], "hard:"), strings.HasPrefix(tr[b], "hard:")
		if ha != hb {
			if ha {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	var chmods []func() error // directory modes, set last (children first)
	defer func() {
		for i := len(chmods) - 1; i >= 0; i-- {
			if err := chmods[i](); err != nil {
				t.Fatal(err)
			}
		}
	}()
	for _, k := range keys {
		p := filepath.Join(root, k)
		spec := tr[k]
		kind, arg, _ := strings.Cut(spec, ":")
		var err error
		switch {
		case kind == "file":
			err = os.WriteFile(p, []byte(arg), 0o644)
			if err == nil {
				err = os.Chmod(p, 0o644)
			}
		case strings.HasPrefix(kind, "file"):
			var m uint32
			fmt.Sscanf(kind[4:], "%o", &m)
			if err = os.WriteFile(p, []byte(arg), 0o644); err == nil {
				err = os.Chmod(p, os.FileMode(m))
			}
		case kind == "dir":
			err = os.Mkdir(p, 0o755)
		case strings.HasPrefix(kind, "dir"):
			var m uint32
			fmt.Sscanf(kind[3:], "%o", &m)
			err = os.Mkdir(p, 0o755)
			chmods = append(chmods, func() error { return os.Chmod(p, os.FileMode(m)) })
		case kind == "opaque":
			if err = os.Mkdir(p, 0o755); err == nil {
				err = unix.Setxattr(p, xattrOpaque, []byte("y"), 0)
				if errors.Is(err, unix.ENOTSUP) {
					t.Skipf("user xattrs are not supported on %s: the opaque directory cases need them", root)
				}
			}
		case kind == "link":
			err = os.Symlink(arg, p)
		case kind == "fifo":
			err = unix.Mkfifo(p, 0o644)
		case kind == "whiteout":
			err = unix.Mknod(p, unix.S_IFCHR|0o000, 0)
			if errors.Is(err, unix.EPERM) {
				t.Skip("cannot make a whiteout (character device 0/0) as this user: the deletion cases need root or a kernel that allows it")
			}
		case kind == "hard":
			err = os.Link(filepath.Join(root, arg), p)
		default:
			t.Fatalf("bad spec %q", spec)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// short is a change in one line, for comparisons: path kind type, then
// what is set of mode, size, target, link, skipped, protected, and the
// base (absent, or its type and whether it has a hash).
func short(c Change) string {
	s := fmt.Sprintf("%q %s %s", c.Path, c.Kind, c.Type)
	if c.Mode != "" {
		s += " " + c.Mode
	}
	if c.Type == TypeFile && c.Kind != Deleted {
		s += fmt.Sprintf(" size=%d", c.Size)
		if c.SHA256 != "" {
			s += " hashed"
		}
	}
	if c.Target != "" {
		s += " ->" + c.Target
	}
	if c.Link != "" {
		s += " link=" + c.Link
	}
	if c.Skipped != "" {
		s += " skipped"
	}
	if c.Protected {
		s += " protected"
	}
	if c.Base.Exists {
		s += " base=" + typeOf(c.Base.Mode)
		if c.Base.SHA256 != "" {
			s += "+hash"
		}
	} else {
		s += " base=none"
	}
	return s
}

func scanDirs(t *testing.T, upper, lower string, protect []string) []Change {
	t.Helper()
	u, err := os.Open(upper)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	l, err := os.OpenFile(lower, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cs, err := Scan(u, l, "/work", protect)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Bind != "/work" {
			t.Errorf("%q: bind %q", c.Path, c.Bind)
		}
	}
	return cs
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		lower, upper tree
		protect      []string
		want         []string
	}{
		{name: "nothing", lower: tree{"a": "file:x"}, upper: tree{}, want: nil},
		{
			name:  "created",
			lower: tree{"d": "dir"},
			upper: tree{"d": "dir", "d/f": "file:hello", "new": "dir", "new/g": "file0600:", "s": "link:../x"},
			want: []string{
				`"d/f" created file 0644 size=5 hashed base=none`,
				`"new" created dir 0755 base=none`,
				`"new/g" created file 0600 size=0 hashed base=none`,
				`"s" symlink symlink 0777 ->../x base=none`,
			},
		},
		{
			name:  "modified",
			lower: tree{"a": "file:old", "b": "file:abc", "c": "file:same", "d": "file:same", "e": "file0755:x"},
			upper: tree{"a": "file:longer", "b": "file:abd", "c": "file:same", "d": "file0755:same", "e": "file0700:y"},
			want: []string{
				`"a" modified file 0644 size=6 hashed base=file+hash`,
				`"b" modified file 0644 size=3 hashed base=file+hash`,
				`"d" mode_changed file 0755 size=4 hashed base=file+hash`,
				`"e" modified file 0700 size=1 hashed base=file+hash`,
			},
		},
		{
			name:  "symlinks",
			lower: tree{"same": "link:t", "moved": "link:t1", "wasfile": "file:x"},
			upper: tree{"same": "link:t", "moved": "link:t2", "wasfile": "link:t"},
			want: []string{
				`"moved" symlink symlink 0777 ->t2 base=symlink`,
				`"wasfile" type_changed symlink 0777 ->t base=file+hash`,
			},
		},
		{
			name: "type changes",
			// A lower symlink under an upper directory is never followed: the
			// directory's contents are all new.
			lower: tree{"f": "file:x", "d": "dir", "d/in": "file:y", "l": "link:/etc"},
			upper: tree{"f": "dir", "f/x": "file:1", "d": "file:now", "l": "dir", "l/passwd": "file:p"},
			want: []string{
				`"d" type_changed file 0644 size=3 hashed base=dir`,
				`"f" type_changed dir 0755 base=file+hash`,
				`"f/x" created file 0644 size=1 hashed base=none`,
				`"l" type_changed dir 0755 base=symlink`,
				`"l/passwd" created file 0644 size=1 hashed base=none`,
			},
		},
		{
			name:  "directory modes",
			lower: tree{"d": "dir", "e": "dir", "e/x": "file:x"},
			upper: tree{"d": "dir0700", "e": "dir"},
			want:  []string{`"d" mode_changed dir 0700 base=dir`},
		},
		{
			name:  "special files are skipped",
			lower: tree{"was": "file:x"},
			upper: tree{"p": "fifo", "was": "fifo"},
			want: []string{
				`"p" created fifo 0644 skipped base=none`,
				`"was" type_changed fifo 0644 skipped base=file+hash`,
			},
		},
		{
			name:  "hard links",
			lower: tree{},
			upper: tree{"b": "file:same inode", "a": "hard:b", "c/d": "hard:b", "c": "dir", "single": "file:1"},
			want: []string{
				`"a" created file 0644 size=10 hashed base=none`,
				`"b" created file 0644 size=10 hashed link=a base=none`,
				`"c" created dir 0755 base=none`,
				`"c/d" created file 0644 size=10 hashed link=a base=none`,
				`"single" created file 0644 size=1 hashed base=none`,
			},
		},
		{
			name:    "hard links to a protected name",
			lower:   tree{},
			upper:   tree{".bashrc": "file:x", "b": "hard:.bashrc", "c": "hard:.bashrc"},
			protect: []string{".bashrc"},
			want: []string{
				`".bashrc" created file 0644 size=1 hashed protected base=none`,
				`"b" created file 0644 size=1 hashed base=none`,
				`"c" created file 0644 size=1 hashed link=b base=none`,
			},
		},
		{
			name:  "names with any byte",
			lower: tree{},
			upper: tree{"new\nline": "file:x", "tab\there": "dir", "bad\xffutf8": "file:"},
			want: []string{
				`"bad\xffutf8" created file 0644 size=0 hashed skipped base=none`,
				`"new\nline" created file 0644 size=1 hashed base=none`,
				`"tab\there" created dir 0755 base=none`,
			},
		},
		{
			name:    "protected",
			lower:   tree{".git": "dir", ".git/hooks": "dir", "sub": "dir"},
			upper:   tree{".git": "dir", ".git/hooks": "dir", ".git/hooks/pre-commit": "file:evil", ".bashrc": "file:x", "sub": "dir", "sub/.envrc": "file:y", "ok": "file:z"},
			protect: []string{".git/hooks", ".bashrc", ".envrc"},
			want: []string{
				`".bashrc" created file 0644 size=1 hashed protected base=none`,
				`".git/hooks/pre-commit" created file 0644 size=4 hashed protected base=none`,
				`"ok" created file 0644 size=1 hashed base=none`,
				`"sub/.envrc" created file 0644 size=1 hashed protected base=none`,
			},
		},
		{
			name:  "whiteouts",
			lower: tree{"f": "file:x", "d": "dir", "d/a": "file:a", "d/b": "dir", "d/b/c": "file:c", "l": "link:t", "p": "fifo"},
			upper: tree{"f": "whiteout", "d": "whiteout", "l": "whiteout", "p": "whiteout", "gone": "whiteout"},
			want: []string{
				`"d" deleted dir base=dir`,
				`"f" deleted file base=file+hash`,
				`"l" deleted symlink base=symlink`,
				`"p" deleted fifo base=fifo`,
			},
		},
		{
			name: "opaque directory",
			// rm -r a; mkdir -p a/sub; ...: only a is marked opaque, and a/sub
			// (made inside it) hides lower a/sub's names too.
			lower: tree{"a": "dir", "a/keep": "file:k", "a/changed": "file:1", "a/gone": "file:g", "a/sub": "dir", "a/sub/z": "file:z", "a/sub/y": "file:y", "a/gonedir": "dir", "a/gonedir/q": "file:q"},
			upper: tree{"a": "opaque", "a/keep": "file:k", "a/changed": "file:2", "a/new": "file:n", "a/sub": "dir", "a/sub/y": "file:y"},
			want: []string{
				`"a/changed" modified file 0644 size=1 hashed base=file+hash`,
				`"a/gone" deleted file base=file+hash`,
				`"a/gonedir" deleted dir base=dir`,
				`"a/new" created file 0644 size=1 hashed base=none`,
				`"a/sub/z" deleted file base=file+hash`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			tc.lower.build(t, filepath.Join(d, "lower"))
			tc.upper.build(t, filepath.Join(d, "upper"))
			var got []string
			for _, c := range scanDirs(t, filepath.Join(d, "upper"), filepath.Join(d, "lower"), tc.protect) {
				got = append(got, short(c))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestScanBase: the baseline is the host path's lstat and content hash.
func TestScanBase(t *testing.T) {
	d := t.TempDir()
	lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
	tree{"m": "file:before", "n": "dir"}.build(t, lower)
	tree{"m": "file:after!", "n": "dir", "n/new": "file:"}.build(t, upper)
	cs := scanDirs(t, upper, lower, nil)
	if len(cs) != 2 {
		t.Fatalf("want 2 changes, got %+v", cs)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(lower, "m"), &st); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("before"))
	want := Stamp{Exists: true, Dev: st.Dev, Ino: st.Ino, Mode: st.Mode, Size: 6,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), SHA256: hex.EncodeToString(sum[:])}
	if cs[0].Base != want {
		t.Errorf("base of m: got %+v, want %+v", cs[0].Base, want)
	}
	after := sha256.Sum256([]byte("after!"))
	if cs[0].SHA256 != hex.EncodeToString(after[:]) || cs[0].Size != 6 {
		t.Errorf("m: got sha %s size %d", cs[0].SHA256, cs[0].Size)
	}
	if cs[1].Path != "n/new" || cs[1].Base != (Stamp{}) {
		t.Errorf("n/new: got %+v", cs[1])
	}
	// Paths round-trip through JSON, newlines included.
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	var back []Change
	if err := json.Unmarshal(b, &back); err != nil || !slices.Equal(back, cs) {
		t.Errorf("JSON round trip: %v\n%+v\n%+v", err, back, cs)
	}
}

// TestScanBigFiles: beyond HashLimit, content is compared byte by byte
// and no hash is recorded.
func TestScanBigFiles(t *testing.T) {
	d := t.TempDir()
	lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
	tree{"same": "file:", "diff": "file:"}.build(t, lower)
	tree{"same": "file:", "diff": "file:"}.build(t, upper)
	size := int64(HashLimit + 4096)
	for _, p := range []string{"lower/same", "upper/same", "lower/diff", "upper/diff"} {
		if err := os.Truncate(filepath.Join(d, p), size); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(filepath.Join(upper, "diff"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{1}, size-1)
	f.Close()
	var got []string
	for _, c := range scanDirs(t, upper, lower, nil) {
		got = append(got, short(c))
	}
	want := []string{fmt.Sprintf(`"diff" modified file 0644 size=%d base=file`, size)}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestScanHostMount: a path that is another mount on the host is skipped
// (apply does not cross mounts), and nothing below it is read.
func TestScanHostMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs on the host needs root")
	}
	d := t.TempDir()
	lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
	tree{"m": "dir"}.build(t, lower)
	tree{"m": "dir", "m/x": "file:x"}.build(t, upper)
	if err := unix.Mount("tmpfs", filepath.Join(lower, "m"), "tmpfs", 0, ""); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	defer unix.Unmount(filepath.Join(lower, "m"), unix.MNT_DETACH)
	var got []string
	for _, c := range scanDirs(t, upper, lower, nil) {
		got = append(got, short(c))
	}
	want := []string{`"m" type_changed dir 0755 skipped base=none`}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestScanUnreadable: what the command made unreadable (chmod 000) in the
// upper layer is read anyway, and its mode is left as it was; a host file
// the supervisor cannot read has no hash in its baseline.
func TestScanUnreadable(t *testing.T) {
	d := t.TempDir()
	lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
	tree{"hostsecret": "file0000:x"}.build(t, lower)
	tree{"hostsecret": "file0000:yy", "secret": "file0000:x", "locked": "dir0000", "locked/in": "file:y", "wonly": "dir0300", "wonly/f": "file:z"}.build(t, upper)
	t.Cleanup(func() {
		os.Chmod(filepath.Join(upper, "locked"), 0o700)
		os.Chmod(filepath.Join(upper, "wonly"), 0o700)
	})
	var got []string
	for _, c := range scanDirs(t, upper, lower, nil) {
		got = append(got, short(c))
	}
	base := "file"
	if os.Geteuid() == 0 {
		base = "file+hash" // root reads it
	}
	want := []string{
		`"hostsecret" modified file 0000 size=2 hashed base=` + base,
		`"locked" created dir 0000 base=none`,
		`"locked/in" created file 0644 size=1 hashed base=none`,
		`"secret" created file 0000 size=1 hashed base=none`,
		`"wonly" created dir 0300 base=none`,
		`"wonly/f" created file 0644 size=1 hashed base=none`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
	for p, m := range map[string]os.FileMode{"secret": 0, "locked": os.ModeDir, "wonly": os.ModeDir | 0o300, "hostsecret": 0} {
		if fi, err := os.Lstat(filepath.Join(upper, p)); err != nil || fi.Mode() != m {
			t.Errorf("%s: mode %v (%v), want %v left as the command made it", p, fi.Mode(), err, m)
		}
	}
}

// TestScanRefuses: an upper layer Scan cannot read right (an overlay
// mounted with redirect_dir or metacopy, which tooljail never does) is an
// error naming the path, not a wrong change list.
func TestScanRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, path, xattr, want string
	}{
		{"redirect", "d", xattrRedirect, `"d" in the upper layer has a redirect`},
		{"metacopy", "d/f", xattrMetacopy, `"d/f" in the upper layer is a metacopy`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			lower, upper := filepath.Join(d, "lower"), filepath.Join(d, "upper")
			tree{"d": "dir", "d/f": "file:x"}.build(t, lower)
			tree{"d": "dir", "d/f": "file:y"}.build(t, upper)
			if err := unix.Setxattr(filepath.Join(upper, tc.path), tc.xattr, []byte("/x"), 0); err != nil {
				t.Skipf("set %s: %v", tc.xattr, err)
			}
			u, _ := os.Open(upper)
			defer u.Close()
			l, _ := os.Open(lower)
			defer l.Close()
			cs, err := Scan(u, l, "/work", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, %+v; want an error saying %s", err, cs, tc.want)
			}
		})
	}
	// The host directory must be a directory.
	d := t.TempDir()
	f := filepath.Join(d, "file")
	os.WriteFile(f, nil, 0o644)
	u, _ := os.Open(d)
	defer u.Close()
	l, _ := os.Open(f)
	defer l.Close()
	if _, err := Scan(u, l, "/work", nil); err == nil || !strings.Contains(err.Error(), "open the host directory") {
		t.Errorf("a file as the host directory: %v", err)
	}
}

func TestKindByType(t *testing.T) {
	for _, c := range []struct {
		exists, same bool
		utype        uint32
		want         string
	}{
		{false, false, unix.S_IFLNK, Symlink},
		{false, false, unix.S_IFREG, Created},
		{false, false, unix.S_IFDIR, Created},
		{true, false, unix.S_IFREG, TypeChanged},
		{true, false, unix.S_IFLNK, TypeChanged},
		{true, true, unix.S_IFREG, ""}, // content and mode tell
		{true, true, unix.S_IFLNK, ""}, // the target tells
	} {
		if got := kindByType(c.exists, c.same, c.utype); got != c.want {
			t.Errorf("kindByType(%v, %v, %#o) = %q, want %q", c.exists, c.same, c.utype, got, c.want)
		}
	}
}

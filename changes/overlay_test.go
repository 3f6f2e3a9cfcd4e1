package changes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// overlayScript mounts the overlay the jail mounts (userxattr, in a user
// namespace) and runs the commands in it.
const overlayScript = `set -e
umask 022
mount -t overlay overlay -o "lowerdir=$1/lower,upperdir=$1/upper,workdir=$1/work,userxattr" "$1/merged"
cd "$1/merged"
echo new > mod.txt
rm del.txt
rm -r deldir
mv mvsrc.txt moved.txt
mv mvdir mvdir2
rm -r redo && mkdir -p redo/sub && echo n > redo/new && echo keep > redo/sub/kept
chmod 755 chm.sh
: >> keep.txt
touch touched.txt
chown "$(id -u):$(id -g)" owner.txt
ln -sfn target2 lnk
ln -s somewhere newlink
echo h > h1 && ln h1 h2
mkfifo fifo
truncate -s 2 trunc.txt
printf x > "$(printf 'nl\nname')"
mkdir newdir && echo q > newdir/f
rm f2d && mkdir f2d && echo in > f2d/in
rm -r d2f && echo now > d2f
echo evil > .git/hooks/pre-commit
`

// TestScanRealOverlay: real commands in a real overlay, and Scan's
// entries exactly.
func TestScanRealOverlay(t *testing.T) {
	d := t.TempDir()
	for _, dir := range []string{"upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(d, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tree{
		"mod.txt": "file:old\n", "del.txt": "file:d\n",
		"deldir": "dir", "deldir/a": "file:a", "deldir/b": "dir", "deldir/b/c": "file:c",
		"mvsrc.txt": "file:moved\n", "mvdir": "dir", "mvdir/m": "file:m\n",
		"redo": "dir", "redo/old1": "file:1", "redo/sub": "dir", "redo/sub/old2": "file:2", "redo/sub/kept": "file:keep\n",
		"chm.sh": "file:s\n", "keep.txt": "file:k\n", "touched.txt": "file:t\n", "owner.txt": "file:o\n",
		"lnk": "link:target1", "trunc.txt": "file:12345\n", "f2d": "file:f\n", "d2f": "dir", "d2f/x": "file:x",
		".git": "dir", ".git/hooks": "dir",
	}.build(t, filepath.Join(d, "lower"))
	// overlay leaves work/work mode 0: as a user, RemoveAll cannot list it.
	t.Cleanup(func() { os.Chmod(filepath.Join(d, "work", "work"), 0o700) })
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", overlayScript, "sh", d)
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "mount: ") && strings.Contains(string(out), "overlay") {
			t.Skipf("overlayfs in a user namespace is not available here: %v: %s", err, out)
		}
		t.Fatalf("the commands in the overlay: %v\n%s", err, out)
	}
	var got []string
	for _, c := range scanDirs(t, filepath.Join(d, "upper"), filepath.Join(d, "lower"), []string{".git/hooks"}) {
		got = append(got, short(c))
	}
	want := []string{
		`".git/hooks/pre-commit" created file 0644 size=5 hashed protected base=none`,
		`"chm.sh" mode_changed file 0755 size=2 hashed base=file+hash`,
		`"d2f" type_changed file 0644 size=4 hashed base=dir`,
		`"del.txt" deleted file base=file+hash`,
		`"deldir" deleted dir base=dir`,
		`"f2d" type_changed dir 0755 base=file+hash`,
		`"f2d/in" created file 0644 size=3 hashed base=none`,
		`"fifo" created fifo 0644 skipped base=none`,
		`"h1" created file 0644 size=2 hashed base=none`,
		`"h2" created file 0644 size=2 hashed link=h1 base=none`,
		`"lnk" symlink symlink 0777 ->target2 base=symlink`,
		`"mod.txt" modified file 0644 size=4 hashed base=file+hash`,
		`"moved.txt" created file 0644 size=6 hashed base=none`,
		// A lower directory cannot be renamed (no redirect_dir): mv copied it.
		`"mvdir" deleted dir base=dir`,
		`"mvdir2" created dir 0755 base=none`,
		`"mvdir2/m" created file 0644 size=2 hashed base=none`,
		`"mvsrc.txt" deleted file base=file+hash`,
		`"newdir" created dir 0755 base=none`,
		`"newdir/f" created file 0644 size=2 hashed base=none`,
		`"newlink" symlink symlink 0777 ->somewhere base=none`,
		`"nl\nname" created file 0644 size=1 hashed base=none`,
		// rm -r redo; mkdir -p redo/sub: redo is opaque, redo/sub is not
		// marked but hides lower redo/sub too; kept has its old content.
		`"redo/new" created file 0644 size=2 hashed base=none`,
		`"redo/old1" deleted file base=file+hash`,
		`"redo/sub/old2" deleted file base=file+hash`,
		`"trunc.txt" modified file 0644 size=2 hashed base=file+hash`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

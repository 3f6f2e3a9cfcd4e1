package changes

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// storeOverlayScript mounts the overlay the jail mounts (userxattr, in a
// user namespace) on a store's layers, edits the project through it, and
// prints the merged tree (manifest) before it goes away.
const storeOverlayScript = `set -e
umask 022
mount -t overlay overlay -o "lowerdir=$1,upperdir=$2,workdir=$3,userxattr" "$4"
cd "$4"
echo new > mod.txt
rm del.txt
rm -r deldir
mv mvsrc.txt moved.txt
mv mvdir mvdir2
rm -r redo && mkdir -p redo/sub && echo n > redo/new && echo keep > redo/sub/kept
chmod 755 chm.sh
ln -sfn target2 lnk
ln -s somewhere newlink
echo h > h1 && ln h1 sub/h2
truncate -s 2 trunc.txt
truncate -s 8M sparse && echo tail >> sparse
mkdir newdir && echo q > newdir/f && chmod 700 newdir
rm f2d && mkdir f2d && echo in > f2d/in
rm -r d2f && echo now > d2f
` + manifestScript

// manifestScript prints every path below the current directory: type,
// mode, target, inode-sharing hard links by first name, and contents'
// hashes.
// (A directory's link count is left out: overlayfs shows 1.)
const manifestScript = `find . -mindepth 1 ! -type f -printf '%P %y %m %l\n' | LC_ALL=C sort
find . -type f -printf '%P %y %m %n\n' | LC_ALL=C sort
find . -type f -exec sha256sum {} + | LC_ALL=C sort -k2
`

// TestStoreRealOverlay: real commands write a real overlay on a store's
// layers; Finish scans them, Apply applies them, and the project is then
// what the command saw.
func TestStoreRealOverlay(t *testing.T) {
	host := filepath.Join(t.TempDir(), "project")
	writeTree(t, host, map[string]string{
		"mod.txt": "old\n", "del.txt": "d\n", "deldir/a": "a", "deldir/b/c": "c",
		"mvsrc.txt": "moved\n", "mvdir/m": "m\n", "redo/old1": "1", "redo/sub/old2": "2", "redo/sub/kept": "keep\n",
		"chm.sh": "s\n", "keep.txt": "k\n", "trunc.txt": "12345\n", "f2d": "f\n", "d2f/x": "x", "sub/": "",
	})
	must(t, os.Symlink("target1", filepath.Join(host, "lnk")))
	s := newStore(t)
	p, err := s.Create(1, os.Getuid(), os.Getgid())
	must(t, err)
	merged := t.TempDir()
	started := time.Now()
	cmd := exec.Command("unshare", "-Urm", "sh", "-c", storeOverlayScript, "sh", host,
		filepath.Join(s.Dir(), p.ID, upperDir, "0"), filepath.Join(s.Dir(), p.ID, workDir, "0"), merged)
	out, err := cmd.Output()
	if err != nil {
		p.Abort()
		var ee *exec.ExitError
		if errors := ""; asExit(err, &ee) {
			errors = string(ee.Stderr)
			if strings.Contains(errors, "unshare failed") || strings.Contains(errors, "mount: ") {
				t.Skipf("overlayfs in a user namespace is not available here: %v: %s", err, errors)
			}
		}
		t.Fatalf("the commands in the overlay: %v", err)
	}
	var st unix.Stat_t
	must(t, unix.Stat(host, &st))
	lower, err := os.OpenFile(host, unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	defer lower.Close()
	run := RunInfo{Argv: []string{"sh"}, Started: started, Ended: time.Now(), Mode: Review, Owner: os.Getuid(),
		Binds: []BindInfo{{Dest: "/work", Host: host, Dev: st.Dev, Ino: st.Ino, UID: -1, GID: -1}}}
	rep, err := p.Finish(run, []*os.File{lower})
	if err != nil && strings.Contains(err.Error(), "not merged yet") {
		p.Abort()
		t.Skip("Scan is the stand-in until cscan merges")
	}
	must(t, err)
	if rep.State != StateKept || rep.ID == "" {
		t.Fatalf("report %+v", rep)
	}
	if got := readString(t, filepath.Join(host, "mod.txt")); got != "old\n" {
		t.Fatalf("the run wrote the host: mod.txt = %q", got)
	}
	_, err = s.Apply(rep.ID, ApplyOptions{})
	must(t, err)
	sh := exec.Command("sh", "-c", manifestScript)
	sh.Dir = host
	after, err := sh.Output()
	must(t, err)
	if string(after) != string(out) {
		t.Errorf("the project after the apply:\n%s\nwhat the command saw:\n%s", after, out)
	}
	if l := leftovers(t, host); len(l) > 0 {
		t.Errorf("left in the project: %v", l)
	}
	var sp unix.Stat_t
	must(t, unix.Stat(filepath.Join(host, "sparse"), &sp))
	if sp.Blocks*512 > 1<<20 {
		t.Errorf("sparse: %d bytes on disk", sp.Blocks*512)
	}
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

package changes

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAsNobody runs the store's and apply's tests again as uid 65534:
// an unprivileged user's store, layers, applies and recovery.
func TestAsNobody(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run as root, the suite re-runs itself as uid 65534")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	base := t.TempDir()
	must(t, os.Chmod(filepath.Dir(base), 0o755))
	must(t, os.Chmod(base, 0o755))
	bin := filepath.Join(base, "changes.test")
	src, err := os.Open(os.Args[0])
	must(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	must(t, err)
	_, err = io.Copy(dst, src)
	must(t, err)
	src.Close()
	must(t, dst.Close())
	tmp := filepath.Join(base, "tmp")
	must(t, os.Mkdir(tmp, 0o700))
	must(t, os.Chown(tmp, 65534, 65534))
	tests := []string{
		"TestIDCheckedBeforeUse", "TestOpenCreatesPrivateDirs", "TestOpenRefusesSharedStore", "TestOpenRefusesPlantedSymlink",
		"TestCreateLayers", "TestFinishEmpty", "TestFinishKeepsSet", "TestFinishFlagsChangesDuringRun", "TestDiscard",
		"TestApply", "TestApplyTouchesOnlyTheSet", "TestApplyConflicts", "TestApplyRefusesPlantedSymlink",
		"TestApplyRefusesReplacedBind", "TestApplySkipsProtectedAndSpecial", "TestApplyHardLinks", "TestApplySparseFile",
		"TestApplyModeAndXattrs", "TestApplyUnreadableCopies", "TestApplyKilled", "TestApplyRefusesDamagedSet", "TestApplyNestedDeletes", "TestStoreRealOverlay", "TestDiffSides", "TestApplyErrorRollsBack", "TestGC", "TestApplyCreatedAsCaller",
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		bin, "-test.run=^("+strings.Join(tests, "|")+")$", "-test.count=1", "-test.v")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "HOME=" + tmp}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid 65534: %v\n%s", err, out)
	}
	for _, name := range tests {
		if name == "TestStoreRealOverlay" && strings.Contains(string(out), "Scan is the stand-in") {
			continue // until cscan merges (then it must pass here too)
		}
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass as uid 65534:\n%s", name, out)
		}
	}
}

// An unprivileged apply leaves what it creates its own (it cannot give
// it away), and a file it replaces is its new inode.
func TestApplyCreatedAsCaller(t *testing.T) {
	f := newFixture(t)
	writeTree(t, f.host, map[string]string{"mine.txt": "x"})
	f.file("mine.txt", "edited", 0o644)
	f.file("new.txt", "new", 0o644)
	id := f.finish()
	_, err := f.s.Apply(id, ApplyOptions{})
	must(t, err)
	for _, rel := range []string{"mine.txt", "new.txt"} {
		if st := statOwner(t, filepath.Join(f.host, rel)); st != os.Geteuid() {
			t.Errorf("%s: owner %d, want %d", rel, st, os.Geteuid())
		}
	}
}

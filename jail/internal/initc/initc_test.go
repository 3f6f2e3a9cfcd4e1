package initc

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEncodeCall(t *testing.T) {
	msg := EncodeCall(Call{Args: []string{"ls", "-l"}, Env: []string{"A=1"}, Paths: []string{"/bin/ls"}, Dir: "/w", TTY: true, Rows: 24, Cols: 80, Keep: true})
	if got := binary.NativeEndian.Uint32(msg); got != 0x746a6332 {
		t.Fatalf("magic %#x, want stage2.h's TJ_CALL_MAGIC", got)
	}
	counts := make([]uint32, 6)
	for i := range counts {
		counts[i] = binary.NativeEndian.Uint32(msg[4+4*i:])
	}
	// argc, envc, npaths, ndir, flags (TTY|KEEP), then rows and cols.
	if want := []uint32{2, 1, 1, 1, 3}; !slices.Equal(counts[:5], want) {
		t.Errorf("header counts and flags %v, want %v", counts[:5], want)
	}
	if r, c := binary.NativeEndian.Uint16(msg[24:]), binary.NativeEndian.Uint16(msg[26:]); r != 24 || c != 80 {
		t.Errorf("terminal %dx%d, want 24x80", r, c)
	}
	if got, want := string(msg[CallHeaderSize:]), "ls\x00-l\x00A=1\x00/bin/ls\x00/w\x00"; got != want {
		t.Errorf("strings %q, want %q", got, want)
	}
	// No directory: none is sent (the plan's), and no flags.
	msg = EncodeCall(Call{Args: []string{"true"}})
	if n, f := binary.NativeEndian.Uint32(msg[16:]), binary.NativeEndian.Uint32(msg[20:]); n != 0 || f != 0 {
		t.Errorf("ndir %d flags %d for a call without a directory or terminal", n, f)
	}
}

func TestParseRecord(t *testing.T) {
	if _, ok := ParseRecord(make([]byte, recordHeader-1)); ok {
		t.Error("a packet shorter than a record's header parsed")
	}
	b := make([]byte, recordHeader, recordHeader+8)
	binary.NativeEndian.PutUint32(b, RecStage2Fail)
	binary.NativeEndian.PutUint32(b[4:], StepExecNotFound)
	b = append(b, "/bin/x\x00junk"...)
	r, ok := ParseRecord(b)
	if !ok || r.Type != RecStage2Fail || r.Step != StepExecNotFound || r.Path != "/bin/x" || len(r.Fills) != 0 {
		t.Errorf("ParseRecord = %+v, %v", r, ok)
	}
}

func TestPhraseTables(t *testing.T) {
	for name, rows := range map[string][]Phrase{"init": InitSteps(), "ops": InitOps(), "stage2": Stage2Steps()} {
		if len(rows) < 2 || rows[0].Name != "" {
			t.Errorf("%s: %d rows, the first %+v: want row 0 unused", name, len(rows), rows[0])
		}
		for i, r := range rows[1:] {
			if r.Name == "" || r.Text == "" {
				t.Errorf("%s: row %d has no name or text: %+v", name, i+1, r)
			}
		}
	}
	if got := InitSteps()[StepFS].Name; got != "FS" {
		t.Errorf("StepFS names %q", got)
	}
	if got := Stage2Steps()[StepExecNotFound].Name; got != "EXEC_NOT_FOUND" {
		t.Errorf("StepExecNotFound names %q", got)
	}
}

func TestCompileRefuses(t *testing.T) {
	base := func() *Plan {
		return &Plan{Base: "/tmp", Hostname: "h", CgroupFD: -1, Stage2: Stage2{Args: []string{"true"}}}
	}
	for _, c := range []struct {
		name string
		edit func(*Plan)
		want string
	}{
		{"no command", func(p *Plan) { p.Stage2.Args = nil }, "no command"},
		{"too many mounts", func(p *Plan) { p.Mounts = make([]Mount, MaxSources+1) }, "mounts: a jail takes at most"},
		{"too many rlimits", func(p *Plan) { p.Stage2.Rlimits = make([]Rlimit, 9) }, "resource limits"},
	} {
		p := base()
		c.edit(p)
		cp, err := Compile(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Compile = %v, want an error with %q", c.name, err, c.want)
		}
		if cp != nil {
			cp.Free()
		}
	}
	// A warm stage 2 has no command in its plan.
	p := base()
	p.Stage2 = Stage2{Warm: true}
	cp, err := Compile(p)
	if err != nil {
		t.Fatalf("a warm plan: %v", err)
	}
	cp.Free()
}

func TestFillLate(t *testing.T) {
	p := &Plan{Base: "/tmp", Hostname: "h", CgroupFD: -1, Stage2: Stage2{Args: []string{"true"}},
		Mounts: []Mount{{Kind: Tmpfs, Dest: "/tmp"}, {Kind: Bind, Dest: "/a"}, {Kind: Bind, Dest: "/b"}, {Kind: Bind, Dest: "/c"}}}
	cp, err := Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Free()
	srcs := []Source{{}, {Open: true, FD: 10, Type: unix.S_IFDIR, Overlay: true, UpperFD: 11, WorkFD: 12}, {}, {Open: true, FD: 13, Type: unix.S_IFREG}}
	fds, err := cp.FillLate(srcs, -1, []Over{{Dest: "/a/x", Dev: 1, Ino: 2, ReadOnly: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Slot order: a source, then its overlay's upper and work, then the next.
	if want := []int{10, 11, 12, 13}; !slices.Equal(fds, want) {
		t.Errorf("descriptors %v, want %v", fds, want)
	}
	if _, err := cp.FillLate(srcs[:3], -1, nil, nil); err == nil {
		t.Error("FillLate took fewer sources than the plan has mounts")
	}
	if _, err := cp.FillLate(srcs, -1, make([]Over, MaxOver+1), nil); err == nil {
		t.Error("FillLate took more files to bind over themselves than there is room for")
	}
	if _, err := cp.FillLate(srcs, -1, nil, &Filter{Insns: make([]unix.SockFilter, 1)}); err == nil || !strings.Contains(err.Error(), "without seccomp") {
		t.Errorf("a filter for a plan without room for one: %v", err)
	}
}

// TestHeaderSums: mounts and nonsreap compile initc's headers from the
// parent directory, which Go's build cache does not see; each carries the
// headers' sum, so that a header change must change its Go file too.
func TestHeaderSums(t *testing.T) {
	h := sha256.New()
	for _, name := range []string{"init.h", "init_internal.h", "init_steps.h", "stage2.h"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	want := hex.EncodeToString(h.Sum(nil))
	for _, pkg := range []string{"mounts", "nonsreap"} {
		b, err := os.ReadFile(filepath.Join(pkg, pkg+".go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `const initcHeaders = "`+want+`"`) {
			t.Errorf("%s/%s.go: initcHeaders is not the sum of initc's headers; set it to %q (without it Go's build cache keeps C compiled against the old headers)", pkg, pkg, want)
		}
	}
}

package seccomp

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Static payloads that make one getpid through a foreign entry point and
// then exit(0) natively. x32's getpid is 39 | __X32_SYSCALL_BIT; i386's is
// 20 through int 0x80.
var archPayloads = map[string]string{
	"x32:getpid":  ".globl _start\n_start:\n mov $0x40000027, %eax\n syscall\n mov $60, %eax\n xor %edi, %edi\n syscall\n",
	"i386:getpid": ".globl _start\n_start:\n mov $20, %eax\n int $0x80\n mov $60, %eax\n xor %edi, %edi\n syscall\n",
}

func buildPayload(t *testing.T, name, src string) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("gcc not installed: cannot build the x32/i386 payloads")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	s := filepath.Join(dir, "payload.S")
	out := filepath.Join(dir, "payload")
	if err := os.WriteFile(s, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(gcc, "-static", "-nostdlib", "-o", out, s).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", name, err, b)
	}
	// Unfiltered it must exit 0 (an i386 call on a kernel without ia32
	// emulation would crash instead; x32 without CONFIG_X86_X32_ABI gets
	// ENOSYS, which is fine: the filter still sees the number).
	if b, err := exec.Command(out).CombinedOutput(); err != nil {
		t.Skipf("%s payload fails without a filter (no ia32 emulation?): %v %s", name, err, b)
	}
	return out
}

func TestForeignArch(t *testing.T) {
	requireAmd64(t)
	for name, src := range archPayloads {
		t.Run(name, func(t *testing.T) {
			payload := buildPayload(t, name, src)
			t.Run("notify", func(t *testing.T) {
				requireNotify(t)
				prog, err := CompileDir(Policy{}, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				j := startJailed(t, prog, "exec", childOpts{action: ActionDeny, args: []string{payload}})
				st, vs := j.wait(t)
				if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != unix.SIGKILL {
					t.Errorf("payload: %v, want killed by SIGKILL", st)
				}
				if len(vs) != 1 || vs[0].Kind != "arch" || vs[0].Syscall != name || vs[0].Action != "killed" || vs[0].Count != 1 {
					t.Errorf("violations %s, want arch:%s killed once", describe(vs), name)
				}
			})
			t.Run("errno", func(t *testing.T) {
				prog, err := CompileDir(Policy{}, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				j := startJailed(t, prog, "exec", childOpts{args: []string{payload}})
				st, _ := j.wait(t)
				if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != unix.SIGSYS {
					t.Errorf("payload: %v, want killed by SIGSYS", st)
				}
			})
		})
	}
}

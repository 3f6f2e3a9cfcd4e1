package jail_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/serve"
)

// In-process: the Spec comes from a profile, the Cmd runs it in this
// process, as os/exec does, and the Result is the report.
func ExampleCommand() {
	// The workdir, bound read-write: a project directory of the caller's.
	work, err := os.MkdirTemp("", "tooljail-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(work)
	p, err := profiles.Load("default")
	if err != nil {
		fmt.Println(err)
		return
	}
	// Only for this example: run without cgroup caps where the host cannot
	// enforce them (cgroup v1 and not root). The report says so.
	p.AddAllowDegraded("cgroup")
	spec, err := p.Spec(profiles.Request{
		Args: []string{"/bin/sh", "-c", "echo hello from $(hostname) as $(id -un)"},
		Cwd:  work,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := jail.Command(spec)
	cmd.Stdout = os.Stdout
	r, err := cmd.Run()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Status, r.ExitCode)
	// Output:
	// hello from tooljail as sandbox
	// exited 0
}

// Served: the same run through a `tooljail serve` server (here one in this
// process, on a socket of its own). The request names the server's profile
// instead of bringing a Spec; the Result is the same report.
func Example_served() {
	dir, err := os.MkdirTemp("", "tooljail-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(profile, []byte("extends = \"default\"\nallow_degraded = [\"cgroup\"]\n"), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	l, err := serve.Listen(filepath.Join(dir, "run", "sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &serve.Server{Profiles: []string{profile}}
	go srv.Serve(l)
	defer srv.Shutdown(context.Background())

	c, err := serve.Dial(filepath.Join(dir, "run", "sock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := c.Run(context.Background(), serve.Request{
		Argv: []string{"/bin/sh", "-c", "echo hello from $(hostname) as $(id -un)"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(*r.Stdout.Text)
	fmt.Println(r.Status, r.ExitCode)
	// Output:
	// hello from tooljail as sandbox
	// exited 0
}

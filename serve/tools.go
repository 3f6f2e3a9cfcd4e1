package serve

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/internal/units"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
	"github.com/tooljail/tooljail/tools/call"
)

// servedTools are the tools of Server.Tools: calls of them come as
// requests with "tool" and "arguments" (docs/serve.md) and go through
// package tools/call, as `tooljail mcp` makes them; one rate limiter
// holds across all clients.
type servedTools struct {
	file    *tools.File
	objs    []*hostpath.Object // the tool files, trusted: read-only to a jail whose workdir holds them
	limiter *tools.Limiter
	log     *call.Log // nil without an audit log
	// longest is the longest timeout of the tools, 0 when one has none.
	longest time.Duration
	// ctx ends the calls when Shutdown's grace period is over.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

// loadTools loads the tool files (a name declared in two is an error),
// resolves every tool (a tool that could never run is an error now) and
// opens the audit log for tool calls.
func (s *Server) loadTools() error {
	if len(s.Tools) == 0 {
		return nil
	}
	var files []*tools.File
	var abs []string
	for _, path := range s.Tools {
		a, err := filepath.Abs(path)
		if err != nil {
			return fmt.Errorf("tool file %s: %w", path, err)
		}
		f, err := tools.Load(a)
		if err != nil {
			return err
		}
		files, abs = append(files, f), append(abs, a)
	}
	f, err := tools.Merge(files...)
	if err != nil {
		return err
	}
	st := &servedTools{file: f, limiter: tools.NewLimiter(tools.ServerDefaults.Rates(f))}
	unlimited := false
	for _, t := range f.Tools {
		r, err := call.Resolve(f, tools.ServerDefaults, t)
		if err != nil {
			return err
		}
		d, err := units.ParseDuration(r.Limits["timeout"])
		if err != nil || d == 0 {
			unlimited = true
		}
		st.longest = max(st.longest, d)
	}
	if unlimited {
		st.longest = 0
	}
	for i, a := range abs {
		obj, err := hostpath.Open(a, hostpath.Options{})
		if err != nil {
			st.closeObjs()
			return fmt.Errorf("tool file %s: %w", s.Tools[i], err)
		}
		st.objs = append(st.objs, obj)
	}
	if s.AuditLog != "" {
		path, err := filepath.Abs(s.AuditLog)
		if err == nil {
			st.log, err = call.OpenLog(path)
		}
		if err != nil {
			st.closeObjs()
			return fmt.Errorf("audit log: %w", err)
		}
	}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	s.tools = st
	return nil
}

func (t *servedTools) closeObjs() {
	for _, o := range t.objs {
		o.Close()
	}
}

// checkToolRequest refuses what a tool request may not carry: the tool
// file decides the program, the profile, the limits and the network, and
// a call's output comes whole.
func checkToolRequest(r *Request) *Error {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"argv", r.Argv != nil}, {"profile", r.Profile != ""}, {"profile_toml", r.ProfileTOML != ""},
		{"limits", r.Limits != nil}, {"network", r.Network != ""}, {"env", r.Env != nil}, {"stream", r.Stream}, {"exec_event", r.ExecEvent},
		{"merge_stderr", r.MergeStderr}, {"tty", r.TTY || r.TTYRows != 0 || r.TTYCols != 0}, {"toolchains", r.Toolchains != nil}, {"path", r.Path != ""},
		{"changes", r.Changes != ""}, {"session", r.Session != ""}, {"session_op", r.SessionOp != nil}, {"keep_running", r.KeepRunning}, {"cwd", r.Cwd != ""},
	} {
		if f.set {
			return refuse("%s: not taken with tool; a tool call is the tool's name, its arguments, a workdir and stdin: the tool file decides the rest", f.name)
		}
	}
	if r.Workdir == "" || !filepath.IsAbs(r.Workdir) {
		return refuse("workdir %q: a tool call needs its working directory, an absolute host path", r.Workdir)
	}
	return nil
}

// serveTool makes one tool call and writes its outcome: the line of
// `tooljail tools call --json` (docs/serve.md), or an error line when the
// call was refused. The call's audit line is tools/call's.
func (s *Server) serveTool(conn net.Conn, br *bufio.Reader, out *connWriter, req *Request, peer *report.Peer) {
	if s.tools == nil {
		s.refuseCall(out, peer, req, refuse("tool %q: this server serves no tools; start it with --tools FILE", req.Tool))
		return
	}
	if e := checkToolRequest(req); e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	if e := s.track(); e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	defer s.untrack(nil)
	ctx, cancel := context.WithCancel(s.tools.ctx)
	defer cancel()
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		// As for a run: any end of the client's side is the client gone.
		drain(br)
		cancel()
	}()
	c := &call.Caller{
		File: s.tools.file, Defaults: tools.ServerDefaults, Workdir: req.Workdir,
		Limiter: s.tools.limiter, Log: s.tools.log, Trusted: s.tools.objs,
		Warn: func(err error) {
			if s.ErrorLog != nil {
				s.ErrorLog.Print(err)
			}
		},
		CheckSpec: func(spec *jail.Spec) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.hidden.check(spec)
		},
		// A tool call's change set is its client's, as a run's is.
		ChangeStore: func(client report.Peer) (string, int, error) {
			dir, e := peerStore(os.Geteuid(), client.UID, s.ChangesDir)
			if e != nil {
				return "", 0, e
			}
			return dir, client.UID, nil
		},
	}
	client := *peer
	client.RequestID = req.ID
	o, err := c.Call(ctx, call.Request{Tool: req.Tool, Args: req.Arguments, Stdin: req.Stdin, Client: client})
	switch {
	case o == nil:
		out.writeError(refuse("%v", err))
	case o.Decision != "admitted":
		out.writeError(&Error{Code: o.ExitCode, Message: o.Error})
	default:
		out.writeLine(o)
	}
	if err != nil && s.ErrorLog != nil {
		s.ErrorLog.Printf("audit log: %v", err)
	}
	conn.Close()
	watch.Wait()
}

// close releases the tool file and the tool calls' audit log, once no
// call runs.
func (t *servedTools) close() {
	if t == nil {
		return
	}
	t.closeOnce.Do(func() {
		t.cancel()
		t.closeObjs()
		t.log.Close()
	})
}

package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools/call"
)

// New returns an MCP server with one tool per tool of c.File, each call
// made through c for client (who the calls are recorded as: over stdio,
// the process that started the server). Serve it with Run and a
// transport (mcp.StdioTransport). Each tool's profile is loaded with its
// limits first (call.Resolve): a tool that could never run is an error
// here, before any client sees it.
func New(c *call.Caller, client report.Peer) (*mcp.Server, error) {
	return newServer(c, serverOptions{done: context.Background(), clientOf: func(*mcp.CallToolRequest) report.Peer { return client }})
}

// serverOptions are what a server over HTTP needs beyond New's.
type serverOptions struct {
	// done ends every running call when it ends (the jail kills its
	// tree; the call is recorded).
	done context.Context
	// clientOf names the client of a call.
	clientOf func(*mcp.CallToolRequest) report.Peer
	// running, when not nil, counts the calls whose handler has not
	// returned.
	running *counter
}

// newServer is New with opts.
func newServer(c *call.Caller, opts serverOptions) (*mcp.Server, error) {
	s := mcp.NewServer(&mcp.Implementation{Name: "tooljail", Version: jail.Version}, nil)
	h := func(name string) mcp.ToolHandler { return handler(c, name, opts) }
	for _, t := range c.File.Tools {
		r, err := call.Resolve(c.File, c.Defaults, t)
		if err != nil {
			return nil, err
		}
		// The SDK's typed AddTool would validate arguments against the
		// schema and refuse a bad call before it reaches the handler, and
		// so before the audit log: the raw form leaves every decision to
		// call.Caller, which records each one.
		desc := t.Description
		if t.Generic {
			desc += fmt.Sprintf(" It runs under the profile %s; timeout at most %s.", r.Profile, r.Limits["timeout"])
		}
		s.AddTool(&mcp.Tool{Name: t.Name, Description: desc, InputSchema: Schema(t), Annotations: annotations(r)}, h(t.Name))
	}
	// A call of a tool the file does not declare would be the SDK's
	// protocol error, seen by no audit log: it goes through call.Caller
	// too, which refuses and records it.
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil && c.File.Lookup(r.Params.Name) == nil {
				return h(r.Params.Name)(ctx, r)
			}
			return next(ctx, method, req)
		}
	})
	return s, nil
}

// annotations are the hints a host may show or act on, from the tool's
// resolved policy: read-only when its workdir is (its only other writable
// places are the jail's own tmpfs), open-world when it has a network.
func annotations(r call.Resolved) *mcp.ToolAnnotations {
	open := r.Network != "none"
	return &mcp.ToolAnnotations{ReadOnlyHint: r.ReadOnlyWorkdir, OpenWorldHint: &open}
}

func handler(c *call.Caller, name string, opts serverOptions) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if opts.running != nil {
			opts.running.add()
			defer opts.running.done()
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(opts.done, cancel)()
		r := call.Request{Tool: name, Client: opts.clientOf(req)}
		args, err := decodeArgs(req.Params.Arguments)
		if err != nil {
			// Not an object: call.Caller refuses it, saying so, and
			// records the refusal.
			r.NotAnObject = string(req.Params.Arguments)
		}
		if t := c.File.Lookup(name); t != nil && t.Stdin {
			if v, ok := args[StdinArg]; ok {
				if s, isString := v.(string); isString {
					r.Stdin = []byte(s)
					delete(args, StdinArg)
				}
			}
		}
		r.Args = args
		o, err := c.Call(ctx, r)
		return result(o, err), nil
	}
}

// decodeArgs reads a call's arguments: a JSON object (absent or null is
// none), numbers kept exact.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	args := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return args, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// result is an outcome as MCP content: what went wrong first (a refusal,
// a failed start, bad JSON, the exit), then stdout and stderr as text
// (head and tail when over the output limit, as the report keeps them);
// isError when the call did not do what the tool promises; the outcome
// (call id, decision, the report without the texts, a JSON tool's parsed
// output) as structured content.
func result(o *call.Outcome, err error) *mcp.CallToolResult {
	if o == nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "tooljail: " + err.Error()}}}
	}
	var content []mcp.Content
	add := func(s string) { content = append(content, &mcp.TextContent{Text: s}) }
	if o.Error != "" {
		add("tooljail: " + o.Error)
	}
	if err != nil {
		add("tooljail: " + err.Error())
	}
	structured := *o
	if r := o.Report; r != nil {
		if o.Error == "" && (r.Status != jail.StatusExited || r.ExitCode != 0) {
			add(exitLine(r))
		}
		out, errText := text(r.Stdout), text(r.Stderr)
		if out != "" {
			add(out)
		}
		if errText != "" {
			add("stderr:\n" + errText)
		}
		if c := changesText(r.Changes); c != "" {
			// A change set kept for review: the model can show it to
			// the user, who applies or discards it.
			add(c)
		}
		rep := *r
		rep.Stdout.Text, rep.Stderr.Text = nil, nil
		structured.Report = &rep
	}
	if len(content) == 0 {
		add("(no output)")
	}
	return &mcp.CallToolResult{Content: content, IsError: o.Failed() || err != nil, StructuredContent: &structured}
}

// exitLine says how a run ended, for one that did not exit 0.
func exitLine(r *jail.Result) string {
	line := fmt.Sprintf("tooljail: exit code %d (%s)", r.ExitCode, r.Status)
	if r.Reason != "" {
		line += ": " + strings.TrimSpace(r.Reason)
	}
	return line
}

func text(s jail.Stream) string {
	if s.Text == nil {
		return ""
	}
	return *s.Text
}

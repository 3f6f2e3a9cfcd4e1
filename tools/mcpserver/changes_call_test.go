package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools"
	"github.com/tooljail/tooljail/tools/call"
)

// A tool with changes = "review": the call's writes stay out of the
// workdir, and its result names the kept set in words and in the
// structured report, kept where the Caller's ChangeStore says.
func TestToolChangesReview(t *testing.T) {
	f, err := tools.Parse("tools.toml", []byte(`
[tools.gen]
description = "Generate a file."
command = ["sh", "-c", "echo generated > gen.txt; echo done"]
profile = "default"
changes = "review"
`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testCaller(t)
	c.File = f
	store := filepath.Join(t.TempDir(), "store")
	var asked report.Peer
	c.ChangeStore = func(client report.Peer) (string, int, error) {
		asked = client
		return store, 4242, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	srv, err := New(c, report.Peer{UID: 7, GID: 8, PID: 9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, text, structured := callTool(t, cs, "gen", map[string]any{})
	rep, _ := structured["report"].(map[string]any)
	ch, _ := rep["changes"].(map[string]any)
	if ch != nil && ch["recorded"] == false {
		t.Skipf("this host cannot record changes: %v", ch["reason"])
	}
	if r.IsError || ch == nil || ch["state"] != "kept" {
		t.Fatalf("result %v: %s\n%v", r.IsError, text, structured)
	}
	id, _ := ch["id"].(string)
	for _, want := range []string{"done\n", "tooljail: changes kept for review as change set " + id, "(1 created):\n  created gen.txt\n", "apply: tooljail changes apply " + id} {
		if !strings.Contains(text, want) {
			t.Errorf("the result lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(c.Workdir, "gen.txt")); !os.IsNotExist(err) {
		t.Errorf("a review call wrote the workdir: %v", err)
	}
	if asked.UID != 7 {
		t.Errorf("ChangeStore asked for %+v, want the call's client", asked)
	}
	b, err := os.ReadFile(filepath.Join(store, id, "set.json"))
	var set struct {
		Owner int `json:"owner_uid"`
	}
	if err != nil || json.Unmarshal(b, &set) != nil || set.Owner != 4242 {
		t.Errorf("the set in the Caller's store: %v\n%s", err, b)
	}
}

// Without a ChangeStore a tool call's set goes to the default store of
// the user the server runs as: its changes mode alone is the tool's.
func TestToolChangesRecordWrites(t *testing.T) {
	f, err := tools.Parse("tools.toml", []byte(`
[tools.gen]
description = "Generate a file."
command = ["sh", "-c", "echo generated > gen.txt"]
profile = "default"
changes = "record"
`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := testCaller(t)
	c.File = f
	store := filepath.Join(t.TempDir(), "store")
	c.ChangeStore = func(report.Peer) (string, int, error) { return store, -1, nil }
	o, err := c.Call(context.Background(), call.Request{Tool: "gen", Args: map[string]any{}})
	if err != nil || o.Report == nil || o.Report.Changes == nil {
		t.Fatalf("call: %v, %+v", err, o)
	}
	if !o.Report.Changes.Recorded {
		t.Skipf("this host cannot record changes: %s", o.Report.Changes.Reason)
	}
	if got := changesText(o.Report.Changes); !strings.Contains(got, "tooljail: changes applied to the workdir (1 created):\n  created gen.txt") {
		t.Errorf("text %q (state %s)", got, o.Report.Changes.State)
	}
	if b, err := os.ReadFile(filepath.Join(c.Workdir, "gen.txt")); err != nil || string(b) != "generated\n" {
		t.Errorf("record did not write the workdir: %v %q", err, b)
	}
}

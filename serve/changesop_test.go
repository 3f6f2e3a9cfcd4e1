package serve

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools/call"
)

// changesServer serves the default profile with its change sets in a
// store of the test's; the workdir has one file, old.txt.
func changesServer(t *testing.T) (ts *testServer, store, dir string) {
	t.Helper()
	store = filepath.Join(t.TempDir(), "store")
	ts = startWith(t, func(s *Server) { s.ChangesDir = store })
	dir = t.TempDir()
	os.Chmod(dir, 0o777) // writable by the jail's host user when root
	if err := os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	return ts, store, dir
}

func reviewRun(t *testing.T, ts *testServer, dir, script string) *changes.Report {
	t.Helper()
	r := run(t, ts.client(), Request{Argv: []string{"/bin/sh", "-c", script}, Workdir: dir, Changes: "review"})
	if r.ExitCode != 0 || r.Changes == nil {
		t.Fatalf("exit %d (%s), changes %+v", r.ExitCode, r.Reason, r.Changes)
	}
	if !r.Changes.Recorded {
		t.Skipf("this host cannot record changes: %s", r.Changes.Reason)
	}
	return r.Changes
}

func op(t *testing.T, ts *testServer, o ChangesOp) (json.RawMessage, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ts.client().Changes(ctx, o)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "(absent)"
	}
	return string(b)
}

// A served review run leaves the workdir alone and keeps the set for its
// client, in the client's store; the client shows, diffs and applies it
// through the server.
func TestServedReviewApply(t *testing.T) {
	ts, store, dir := changesServer(t)
	c := reviewRun(t, ts, dir, "echo new > new.txt; echo changed > old.txt")
	if c.State != changes.StateKept || c.ID == "" || c.Totals.Entries != 2 {
		t.Fatalf("changes %+v", c)
	}
	if read(t, filepath.Join(dir, "new.txt")) != "(absent)" || read(t, filepath.Join(dir, "old.txt")) != "old\n" {
		t.Fatal("a review run wrote the host's workdir")
	}
	// Where the set is: a root server's client's own directory.
	want := store
	if os.Geteuid() == 0 {
		want = filepath.Join(store, "uid-0")
	}
	if _, err := os.Stat(filepath.Join(want, c.ID, "set.json")); err != nil {
		t.Errorf("the set is not in %s: %v", want, err)
	}
	raw, err := op(t, ts, ChangesOp{Action: OpList})
	var list []changes.Summary
	if err != nil || json.Unmarshal(raw, &list) != nil || len(list) != 1 || list[0].ID != c.ID {
		t.Errorf("list: %s, %v", raw, err)
	}
	raw, err = op(t, ts, ChangesOp{Action: OpShow, ID: c.ID})
	var set changes.Set
	if err != nil || json.Unmarshal(raw, &set) != nil || len(set.Changes) != 2 || set.Owner != os.Geteuid() {
		t.Errorf("show: %s, %v", raw, err)
	}
	raw, err = op(t, ts, ChangesOp{Action: OpDiff, ID: c.ID, Path: "old.txt"})
	var d diffAnswer
	if err != nil || json.Unmarshal(raw, &d) != nil || !strings.Contains(d.Diff, "+changed") || strings.Contains(d.Diff, "new.txt") {
		t.Errorf("diff: %s, %v", raw, err)
	}
	raw, err = op(t, ts, ChangesOp{Action: OpApply, ID: c.ID})
	var a applyAnswer
	if err != nil || json.Unmarshal(raw, &a) != nil || a.Applied != 2 || a.State != changes.StateApplied {
		t.Fatalf("apply: %s, %v", raw, err)
	}
	if read(t, filepath.Join(dir, "new.txt")) != "new\n" || read(t, filepath.Join(dir, "old.txt")) != "changed\n" {
		t.Error("apply did not write what the command saw")
	}
}

// An apply that finds a path changed on the host applies nothing and
// names it (code 1); discard then leaves nothing.
func TestServedConflictDiscard(t *testing.T) {
	ts, _, dir := changesServer(t)
	c := reviewRun(t, ts, dir, "echo mine > old.txt; echo more > other.txt")
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("theirs\n"), 0o666)
	_, err := op(t, ts, ChangesOp{Action: OpApply, ID: c.ID})
	var e *Error
	if !errors.As(err, &e) || e.Code != 1 || len(e.Conflicts) != 1 || e.Conflicts[0].Path != "old.txt" || !strings.Contains(e.Message, "old.txt") {
		t.Fatalf("apply over a conflict: %#v", err)
	}
	if read(t, filepath.Join(dir, "old.txt")) != "theirs\n" || read(t, filepath.Join(dir, "other.txt")) != "(absent)" {
		t.Error("a conflicting apply wrote something")
	}
	if _, err := op(t, ts, ChangesOp{Action: OpDiscard, ID: c.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := op(t, ts, ChangesOp{Action: OpShow, ID: c.ID}); err == nil || !strings.Contains(err.Error(), "no such change set") {
		t.Errorf("show after discard: %v", err)
	}
	if read(t, filepath.Join(dir, "other.txt")) != "(absent)" {
		t.Error("discard wrote the workdir")
	}
}

// A request's changes must be a mode; a changes_op is checked before
// anything is done, and a malformed one is an error line.
func TestServedChangesRefusals(t *testing.T) {
	ts, _, dir := changesServer(t)
	_, err := ts.client().Run(context.Background(), Request{Argv: []string{"true"}, Workdir: dir, Changes: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), `changes: "sometimes" is not a mode`) {
		t.Errorf("bad mode: %v", err)
	}
	for _, c := range []struct{ line, want string }{
		{`{"changes_op":{"action":"apply","id":"nope"}}`, `changes_op.id "nope"`},
		{`{"changes_op":{"action":"apply","id":"` + testSetID + `"},"argv":["true"]}`, "argv: not taken with changes_op"},
		{`{"changes_op":{"action":"apply","id":"` + testSetID + `"}}`, "no such change set of uid"},
	} {
		lines := ts.call(t, c.line+"\n")
		var answer struct{ Error *Error }
		if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &answer) != nil || answer.Error == nil || !strings.Contains(answer.Error.Message, c.want) {
			t.Errorf("%s: %q, want an error with %q", c.line, lines, c.want)
		}
	}
}

// A client acts only on its own sets; root on a root server acts on any
// client's, in their directories.
func TestChangesOpOwners(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a set of another uid is made by a root supervisor")
	}
	ts, store, dir := changesServer(t)
	if err := ts.Load(); err != nil {
		t.Fatal(err)
	}
	// A set of uid 65534, as a root server keeps it for that client.
	spec := &jail.Spec{Args: []string{"/bin/sh", "-c", "echo theirs > t.txt"}, Dir: dir, Changes: changes.Review,
		ChangesDir: filepath.Join(store, "uid-65534"), ChangesOwner: 65534}
	sp, err := ts.spec(&Request{Argv: spec.Args, Workdir: dir, Changes: "review"}, &report.Peer{UID: 65534, GID: 65534, PID: -1})
	if err != nil {
		t.Fatal(err)
	}
	if sp.ChangesDir != spec.ChangesDir || sp.ChangesOwner != 65534 {
		t.Fatalf("the served spec keeps the set at %q for %d", sp.ChangesDir, sp.ChangesOwner)
	}
	r, err := jail.Command(sp).Run()
	if err != nil || r.Changes == nil || r.Changes.ID == "" {
		t.Fatalf("run: %v, %+v", err, r)
	}
	if !r.Changes.Recorded {
		t.Skipf("this host cannot record changes: %s", r.Changes.Reason)
	}
	id := r.Changes.ID
	if _, e := ts.changesOp(&ChangesOp{Action: OpShow, ID: id}, 1000); e == nil || !strings.Contains(e.Message, "no such change set of uid 1000") {
		t.Errorf("another client saw the set: %v", e)
	}
	res, e := ts.changesOp(&ChangesOp{Action: OpList}, 1000)
	if e != nil || len(res.([]changes.Summary)) != 0 {
		t.Errorf("another client's list: %+v, %v", res, e)
	}
	res, e = ts.changesOp(&ChangesOp{Action: OpShow, ID: id}, 65534)
	if e != nil || res.(*changes.Set).Owner != 65534 {
		t.Errorf("its client's show: %+v, %v", res, e)
	}
	res, e = ts.changesOp(&ChangesOp{Action: OpList}, 0)
	if e != nil || len(res.([]changes.Summary)) != 1 {
		t.Errorf("root's list: %+v, %v", res, e)
	}
	if _, e = ts.changesOp(&ChangesOp{Action: OpDiscard, ID: id}, 0); e != nil {
		t.Errorf("root's discard: %v", e)
	}
	if _, e := ts.changesOp(&ChangesOp{Action: OpShow, ID: id}, -1); e == nil || !strings.Contains(e.Message, "cannot tell who the client is") {
		t.Errorf("an unknown client: %v", e)
	}
}

// A served tool call with changes = "review" keeps its set for its
// client, as a run does, and the client applies it with a changes_op.
func TestServedToolChanges(t *testing.T) {
	dir := t.TempDir()
	prof := profile(t, "default")
	file := filepath.Join(dir, "tools.toml")
	text := "[tools.gen]\ndescription = \"d\"\ncommand = [\"sh\", \"-c\", \"echo gen > gen.txt\"]\nprofile = \"" + prof + "\"\nchanges = \"review\"\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	ts := startWith(t, func(s *Server) { s.Tools = []string{file}; s.ChangesDir = store })
	wd := toolsWorkdir(t)
	lines := ts.call(t, `{"tool":"gen","arguments":{},"workdir":"`+wd+`"}`+"\n")
	var o call.Outcome
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &o) != nil || o.Report == nil || o.Report.Changes == nil {
		t.Fatalf("answer %q", lines)
	}
	c := o.Report.Changes
	if !c.Recorded {
		t.Skipf("this host cannot record changes: %s", c.Reason)
	}
	if c.State != changes.StateKept || c.Totals.Created != 1 {
		t.Fatalf("changes %+v", c)
	}
	want := store
	if os.Geteuid() == 0 {
		want = filepath.Join(store, "uid-0")
	}
	if _, err := os.Stat(filepath.Join(want, c.ID, "set.json")); err != nil {
		t.Errorf("the set is not in the client's store %s: %v", want, err)
	}
	if read(t, filepath.Join(wd, "gen.txt")) != "(absent)" {
		t.Error("a review tool call wrote the workdir")
	}
	if _, err := op(t, ts, ChangesOp{Action: OpApply, ID: c.ID}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(wd, "gen.txt")); got != "gen\n" {
		t.Errorf("after apply: %q", got)
	}
}

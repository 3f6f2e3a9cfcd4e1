package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tooljail/tooljail/changes"
)

// ChangesOp is a request that acts on the client's kept change sets
// instead of running anything (docs/serve.md, "Change sets"):
//
//	{"changes_op": {"action": "apply", "id": "<32 hex>", "force": false}}
//
// answered with one line, {"changes": RESULT} or an error line.
type ChangesOp struct {
	// Action is list, show, diff, apply or discard.
	Action string `json:"action"`
	// ID names the change set (all but list).
	ID string `json:"id,omitempty"`
	// Force applies over conflicts (apply only).
	Force bool `json:"force,omitempty"`
	// Path picks one entry of a diff: "PATH", or "DEST/PATH" for one bind.
	Path string `json:"path,omitempty"`
}

// Change set actions (ChangesOp.Action).
const (
	OpList    = "list"
	OpShow    = "show"
	OpDiff    = "diff"
	OpApply   = "apply"
	OpDiscard = "discard"
)

// opActions are the actions in the order the docs give them.
var opActions = []string{OpList, OpShow, OpDiff, OpApply, OpDiscard}

// checkChangesOp refuses a malformed changes_op request: an unknown
// action, an id that is not one, a field the action does not take, or any
// field of a run beside it (only the request's id may come with it).
func checkChangesOp(r *Request) *Error {
	op := r.ChangesOp
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"argv", r.Argv != nil}, {"workdir", r.Workdir != ""}, {"env", r.Env != nil}, {"stdin", r.Stdin != nil},
		{"profile", r.Profile != ""}, {"profile_toml", r.ProfileTOML != ""}, {"limits", r.Limits != nil},
		{"network", r.Network != ""}, {"stream", r.Stream}, {"exec_event", r.ExecEvent}, {"merge_stderr", r.MergeStderr}, {"tty", r.TTY || r.TTYRows != 0 || r.TTYCols != 0},
		{"toolchains", r.Toolchains != nil}, {"path", r.Path != ""}, {"tool", r.Tool != ""},
		{"arguments", r.Arguments != nil}, {"changes", r.Changes != ""}, {"session", r.Session != ""}, {"session_op", r.SessionOp != nil}, {"keep_running", r.KeepRunning}, {"cwd", r.Cwd != ""},
	} {
		if f.set {
			return refuse("%s: not taken with changes_op; a changes_op request is the action and its change set's id, nothing else", f.name)
		}
	}
	known := false
	for _, a := range opActions {
		known = known || op.Action == a
	}
	if !known {
		return refuse("changes_op.action %q: want one of %s", op.Action, strings.Join(opActions, ", "))
	}
	if op.Action == OpList {
		if op.ID != "" {
			return refuse("changes_op.id: list takes no id; it lists every change set of yours")
		}
	} else if !changes.ValidID(op.ID) {
		return refuse("changes_op.id %q: want a change set's id, the 32 lowercase hex digits of the report's changes.id", clip(op.ID, 64))
	}
	if op.Force && op.Action != OpApply {
		return refuse("changes_op.force: only apply takes it")
	}
	if op.Path != "" && op.Action != OpDiff {
		return refuse("changes_op.path: only diff takes it")
	}
	return nil
}

// changesMode reads a request's changes field: "" is the profile's mode.
func changesMode(s string) (changes.Mode, *Error) {
	if s == "" {
		return "", nil
	}
	m, err := changes.ParseMode(s)
	if err != nil {
		return "", refuse("changes: %q is not a mode: want off, record, review or apply-on-success", s)
	}
	return m, nil
}

// peerStore is the store of a client's change sets. A server run by root
// keeps each client's in a directory of its own, <store>/uid-<uid>,
// created 0700 by changes.Open when first used; a server of one user
// keeps them in its store (its clients are that user and root, and each
// set records its owner). store is the server's store ("" for its user's
// default: then "" is returned for a server of one user, the jail's own
// default). A root server refuses a client it cannot name.
func peerStore(euid, peerUID int, store string) (string, *Error) {
	if euid != 0 {
		return store, nil
	}
	if peerUID < 0 {
		return "", refuse("changes: the server cannot tell who the client is (no SO_PEERCRED), so it has no store for its change sets")
	}
	if store == "" {
		d, err := changes.DefaultDir(0, "", "")
		if err != nil {
			return "", refuse("changes: %v", err)
		}
		store = d
	}
	return filepath.Join(store, fmt.Sprintf("uid-%d", peerUID)), nil
}

// mayAct says whether a client may act on a set of owner: its own, or
// any for root.
func mayAct(peerUID, owner int) bool {
	return peerUID == 0 || peerUID >= 0 && peerUID == owner
}

// decodeChangesOp reads the changes_op object strictly: an unknown field
// is refused, as one of the request is.
func decodeChangesOp(raw []byte) (*ChangesOp, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	op := &ChangesOp{}
	if err := dec.Decode(op); err != nil {
		return nil, err
	}
	return op, nil
}

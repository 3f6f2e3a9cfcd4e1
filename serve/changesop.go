package serve

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/changes"
	"github.com/tooljail/tooljail/report"
)

// serveChangesOp answers a changes_op request with one line: the result,
// or an error line. It runs no jail and takes no run slot; Shutdown waits
// for it as for a call.
func (s *Server) serveChangesOp(out *connWriter, req *Request, peer *report.Peer) {
	if e := checkChangesOp(req); e != nil {
		s.refuseCall(out, peer, req, e)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		out.writeError(refuseShutdown())
		return
	}
	s.calls.Add(1)
	s.mu.Unlock()
	defer s.calls.Done()
	res, e := s.changesOp(req.ChangesOp, peer.UID)
	if e != nil {
		out.writeError(e)
		return
	}
	out.writeLine(struct {
		Changes any `json:"changes"`
	}{res})
}

// Answers of the actions: what `tooljail changes ACTION --json` prints
// (cmd/tooljail/changes.go), and for diff its text in an object.
type (
	diffAnswer struct {
		ID   string `json:"id"`
		Diff string `json:"diff"`
	}
	discardAnswer struct {
		ID    string `json:"id"`
		State string `json:"state"` // "discarded"
	}
	applyAnswer struct {
		ID        string             `json:"id"`
		State     string             `json:"state"` // changes.StateApplied
		Applied   int                `json:"applied"`
		Skipped   []changes.Entry    `json:"skipped"`
		Conflicts []changes.Conflict `json:"conflicts,omitempty"`
	}
)

// maxDiff bounds the text of a diff answer: a diff of large files is read
// with `tooljail changes diff` on the host.
const maxDiff = 16 << 20

// changesOp does op for the client peerUID.
func (s *Server) changesOp(op *ChangesOp, peerUID int) (any, *Error) {
	if peerUID < 0 {
		return nil, refuse("changes_op: the server cannot tell who the client is (no SO_PEERCRED), so it cannot tell whose change sets are whose")
	}
	dirs, e := s.opStores(peerUID)
	if e != nil {
		return nil, e
	}
	if op.Action == OpList {
		return listSets(dirs, peerUID)
	}
	st, set, e := s.findSet(dirs, op.ID, peerUID)
	if e != nil {
		return nil, e
	}
	defer st.Close()
	switch op.Action {
	case OpShow:
		return set, nil
	case OpDiff:
		var b bytes.Buffer
		if err := st.Diff(&limitedBuffer{b: &b, max: maxDiff}, op.ID, op.Path); err != nil {
			return nil, refuse("change set %s: diff: %v", op.ID, err)
		}
		return diffAnswer{ID: op.ID, Diff: b.String()}, nil
	case OpApply:
		res, err := st.Apply(op.ID, changes.ApplyOptions{Force: op.Force})
		var ce *changes.ConflictError
		if errors.As(err, &ce) {
			return nil, &Error{Code: 1, Message: conflictMessage(op.ID, ce.Conflicts), Conflicts: ce.Conflicts}
		}
		if err != nil {
			return nil, refuse("change set %s: apply: %v", op.ID, err)
		}
		skipped := res.Skipped
		if skipped == nil {
			skipped = []changes.Entry{}
		}
		return applyAnswer{ID: op.ID, State: changes.StateApplied, Applied: res.Applied, Skipped: skipped, Conflicts: res.Conflicts}, nil
	case OpDiscard:
		if err := st.Discard(op.ID); err != nil {
			return nil, refuse("change set %s: discard: %v", op.ID, err)
		}
		return discardAnswer{ID: op.ID, State: "discarded"}, nil
	}
	return nil, refuse("changes_op.action %q: want one of %s", op.Action, strings.Join(opActions, ", "))
}

// listSets is every change set in the stores dirs that the client
// peerUID may act on, oldest first; a store not made yet holds none.
func listSets(dirs []string, peerUID int) (any, *Error) {
	all := []changes.Summary{}
	for _, dir := range dirs {
		st, err := changes.Open(dir, changes.Options{})
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, refuse("changes_op list: %v", err)
		}
		sums, err := st.List()
		st.Close()
		if err != nil {
			return nil, refuse("changes_op list: %v", err)
		}
		for _, sum := range sums {
			if mayAct(peerUID, sum.Owner) {
				all = append(all, sum)
			}
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Created.Before(all[j].Created) })
	return all, nil
}

// findSet opens the store in dirs that holds id, a set the client may
// act on; a set of another uid is answered as one that does not exist.
func (s *Server) findSet(dirs []string, id string, peerUID int) (*changes.Store, *changes.Set, *Error) {
	var first error
	for _, dir := range dirs {
		st, err := changes.Open(dir, changes.Options{})
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && first == nil {
				first = err
			}
			continue
		}
		set, err := st.Get(id)
		if err == nil && mayAct(peerUID, set.Owner) {
			return st, set, nil
		}
		st.Close()
	}
	if first != nil {
		return nil, nil, refuse("change set %s: %v", id, first)
	}
	return nil, nil, refuse("change set %s: no such change set of uid %d here (a changes_op list shows yours)", id, peerUID)
}

// opStores are the stores a client's op looks in: its own; for root on a
// server run by root, every client's (uid-N directories).
func (s *Server) opStores(peerUID int) ([]string, *Error) {
	own, e := peerStore(os.Geteuid(), peerUID, s.ChangesDir)
	if e != nil {
		return nil, e
	}
	if own == "" {
		d, err := userStore()
		if err != nil {
			return nil, refuse("changes: %v", err)
		}
		own = d
	}
	if os.Geteuid() != 0 || peerUID != 0 {
		return []string{own}, nil
	}
	dirs := []string{own}
	names, _ := os.ReadDir(filepath.Dir(own))
	for _, n := range names {
		if uid, ok := strings.CutPrefix(n.Name(), "uid-"); ok && n.IsDir() && filepath.Join(filepath.Dir(own), n.Name()) != own {
			if _, err := strconv.Atoi(uid); err == nil {
				dirs = append(dirs, filepath.Join(filepath.Dir(own), n.Name()))
			}
		}
	}
	return dirs, nil
}

// userStore is the default store of the user the server runs as.
func userStore() (string, error) {
	home, _ := os.UserHomeDir()
	return changes.DefaultDir(os.Geteuid(), home, os.Getenv("XDG_STATE_HOME"))
}

func conflictMessage(id string, cs []changes.Conflict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "change set %s: %d path(s) changed on the host since the run, nothing applied:", id, len(cs))
	for i, c := range cs {
		if i == 20 {
			fmt.Fprintf(&b, " ... %d more", len(cs)-20)
			break
		}
		fmt.Fprintf(&b, " %s (%s);", c.Path, c.Why)
	}
	return strings.TrimSuffix(b.String(), ";") + "; apply with force to overwrite them, or discard the set"
}

// limitedBuffer takes up to max bytes and fails past them.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.max {
		return 0, fmt.Errorf("the diff is longer than %d bytes; read it with `tooljail changes diff` on the host, or ask for one path", l.max)
	}
	return l.b.Write(p)
}

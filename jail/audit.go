package jail

import (
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// auditLine is one line of the audit log.
type auditLine struct {
	Time       time.Time `json:"time"`
	ID         string    `json:"id"`
	UID        int       `json:"uid"`
	User       string    `json:"user,omitempty"`
	Command    []string  `json:"command"`
	Workdir    string    `json:"workdir"`
	Profile    string    `json:"profile,omitempty"`
	Status     Status    `json:"status"`
	ExitCode   int       `json:"exit_code"`
	DurationMs int64     `json:"duration_ms"`
	Violations int       `json:"violations"`
}

// AppendAudit appends one JSON line for r to the file at path. The line goes
// out in a single write(2) on an O_APPEND descriptor under an exclusive
// flock, so concurrent runs never interleave within a line.
func AppendAudit(path string, r *Result) error {
	uid := os.Getuid()
	l := auditLine{
		Time: r.StartedAt, ID: r.ID, UID: uid, Command: r.Command, Workdir: r.Workdir,
		Profile: r.Profile, Status: r.Status, ExitCode: r.ExitCode, DurationMs: r.WallTimeMs,
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		l.User = u.Username
	}
	for _, v := range r.Violations {
		l.Violations += v.Count
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	n, err := f.Write(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	if err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return nil
}

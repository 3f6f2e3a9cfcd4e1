package landlock

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// SetAuditEnabled switches the kernel's audit on or off and returns the
// previous state (needs CAP_AUDIT_CONTROL), for tests that need Landlock's
// denial records. An error says why the state cannot be read or changed.
func SetAuditEnabled(on bool) (was bool, err error) {
	was, err = setAudit(on)
	// WatchDenials is to see the new setting at once.
	statuses.drop()
	return was, err
}

// setAudit is SetAuditEnabled leaving WatchDenials' status as it was.
func setAudit(on bool) (was bool, err error) {
	c, err := dialAudit()
	if err != nil {
		return false, fmt.Errorf("audit netlink: %w", err)
	}
	defer c.close()
	st, err := c.status()
	if err != nil {
		return false, fmt.Errorf("cannot read the audit status: %w", err)
	}
	if st.Enabled == 2 {
		return false, errors.New("audit configuration is locked (enabled=2)")
	}
	payload := make([]byte, 32)
	binary.NativeEndian.PutUint32(payload[0:4], 1) // AUDIT_STATUS_ENABLED
	if on {
		binary.NativeEndian.PutUint32(payload[4:8], 1)
	}
	if err := c.send(unix.AUDIT_SET, unix.NLM_F_ACK, payload); err != nil {
		return false, fmt.Errorf("AUDIT_SET: %w", err)
	}
	return st.Enabled == 1, nil
}

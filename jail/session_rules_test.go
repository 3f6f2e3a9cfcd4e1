package jail

import (
	"testing"
)

func TestValidSessionID(t *testing.T) {
	id := newSessionID()
	if !ValidSessionID(id) || newSessionID() == id {
		t.Fatalf("new ids %q: not valid or not new", id)
	}
	for _, bad := range []string{"", "abc", id[:31], id + "0", "0123456789ABCDEF0123456789abcdef", "../../etc/passwd0123456789abcdef0"} {
		if ValidSessionID(bad) {
			t.Errorf("%q is valid", bad)
		}
	}
}

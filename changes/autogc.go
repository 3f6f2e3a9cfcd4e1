package changes

import (
	"time"

	"golang.org/x/sys/unix"
)

// gcStamp is the file whose mtime says when GCIfDue last ran.
const gcStamp = ".gc"

// gcEvery is how often a run's start collects the store: often enough
// that sets expire about when they should, rarely enough that a run does
// not pay for reading every set's size.
const gcEvery = time.Hour

// GCIfDue runs GC when it has not run for gcEvery (by the stamp file in
// the store), so that a store nobody collects by hand stays within its
// expiry and size cap. A run calls it before it makes its own set, which
// it can therefore never remove.
func (s *Store) GCIfDue(now time.Time) ([]string, error) {
	var st unix.Stat_t
	err := unix.Fstatat(int(s.root.Fd()), gcStamp, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && now.Sub(time.Unix(st.Mtim.Unix())) < gcEvery {
		return nil, nil
	}
	fd, err := unix.Openat(int(s.root.Fd()), gcStamp, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	ts := []unix.Timespec{unix.NsecToTimespec(now.UnixNano()), unix.NsecToTimespec(now.UnixNano())}
	unix.UtimesNanoAt(int(s.root.Fd()), gcStamp, ts, unix.AT_SYMLINK_NOFOLLOW)
	unix.Close(fd)
	return s.GC(now)
}

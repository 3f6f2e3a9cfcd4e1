package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"
)

// manifestEntry is one path of a tree as a command sees it: what the
// change-set tests compare between the jail's view at the end of a run
// and the host after an apply (type, mode, content, target, hard links),
// and, for "untouched", the inode and times too.
type manifestEntry struct {
	Path   string `json:"path"` // relative, "/"-separated
	Type   string `json:"type"` // file, dir, symlink, fifo, socket, device
	Mode   string `json:"mode"` // permission bits (07777), octal
	Size   int64  `json:"size"` // regular files only
	SHA256 string `json:"sha256,omitempty"`
	Target string `json:"target,omitempty"`
	// Link is the first path (sorted) of the tree that is the same inode,
	// when there is another one.
	Link    string `json:"link,omitempty"`
	UID     uint32 `json:"uid"`
	GID     uint32 `json:"gid"`
	Ino     uint64 `json:"ino"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
}

// manifest walks root without following a symlink.
func manifest(root string) ([]manifestEntry, error) {
	var l []manifestEntry
	first := map[[2]uint64]string{} // the first name (sorted) of each inode with links
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		e, err := manifestOf(root, p, first)
		if err == nil {
			l = append(l, e)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	resolveLinks(l, first)
	sort.Slice(l, func(i, j int) bool { return l[i].Path < l[j].Path })
	return l, nil
}

// manifestOf is the entry of p below root. A name with hard links gets
// its own path in Link, for resolveLinks, and first keeps the first name
// of its inode.
func manifestOf(root, p string, first map[[2]uint64]string) (manifestEntry, error) {
	rel, _ := filepath.Rel(root, p)
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return manifestEntry{}, err
	}
	e := manifestEntry{Path: filepath.ToSlash(rel), Mode: fmt.Sprintf("%04o", st.Mode&0o7777),
		UID: st.Uid, GID: st.Gid, Ino: st.Ino, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
	if err := e.fillType(p, &st); err != nil {
		return e, err
	}
	if e.Type != "dir" && st.Nlink > 1 {
		e.Link = p // resolved by resolveLinks, once every name is known
		k := [2]uint64{st.Dev, st.Ino}
		if f, ok := first[k]; !ok || e.Path < f {
			first[k] = e.Path
		}
	}
	return e, nil
}

// fillType sets the entry's type and what goes with it: a file's size
// and hash, a symlink's target.
func (e *manifestEntry) fillType(p string, st *unix.Stat_t) error {
	var err error
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type, e.Size = "file", st.Size
		e.SHA256, err = hashFile(p)
	case unix.S_IFDIR:
		e.Type = "dir"
	case unix.S_IFLNK:
		e.Type = "symlink"
		e.Target, err = os.Readlink(p)
	case unix.S_IFIFO:
		e.Type = "fifo"
	case unix.S_IFSOCK:
		e.Type = "socket"
	default:
		e.Type = "device"
	}
	return err
}

// resolveLinks turns each Link (the name's own path) into the first name
// of its inode. Only links within the tree count: a name whose inode has
// no other name here, and the first name itself, get none.
func resolveLinks(l []manifestEntry, first map[[2]uint64]string) {
	count := map[string]int{}
	for i := range l {
		if l[i].Link != "" {
			var st unix.Stat_t
			unix.Lstat(l[i].Link, &st)
			l[i].Link = first[[2]uint64{st.Dev, st.Ino}]
			count[l[i].Link]++
		}
	}
	for i := range l {
		if l[i].Link != "" && (count[l[i].Link] < 2 || l[i].Link == l[i].Path) {
			l[i].Link = ""
		}
	}
}

func hashFile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

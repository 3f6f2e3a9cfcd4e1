package profiles

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// filesystem.root: a directory holding a root file system of its own (an
// unpacked container image, a debootstrap). With it, the jail's system
// directories (filesystem.system) and /etc entries (filesystem.etc) come
// from that tree instead of the host, its symlinks resolved in it; the
// jail's generated /etc files, /proc, /dev, the tmpfs mounts, HOME, the
// workdir and the ro and rw binds are as without it. The jail opens the
// directory once and refuses it unless it belongs to root or the caller
// and no one else may write it (jail.Spec.Root, hostpath.CheckTree).

// checkRoot checks a filesystem.root value without touching the host.
func checkRoot(v string) error {
	if strings.ContainsRune(v, 0) {
		return errors.New("contains a NUL byte")
	}
	return nil
}

// rootDir is the jail's Root: v (relative to cwd, as ro and rw paths
// are), cleaned, or "" for none.
func rootDir(cwd, v string) string {
	if v == "" {
		return ""
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(cwd, v)
	}
	return filepath.Clean(v)
}

// SetRoot sets filesystem.root (as --root does) after checking the value.
func (p *Profile) SetRoot(dir string) error {
	if dir == "" {
		return &KeyError{Key: "filesystem.root", Err: errors.New(`empty: give the directory of an unpacked root file system`)}
	}
	if err := checkRoot(dir); err != nil {
		return &KeyError{Key: "filesystem.root", Err: err}
	}
	p.Filesystem.Root = &dir
	return nil
}

// RefuseRoot says why text, a profile given as text (Parse), may not be
// run for a client of a server, or nil: it sets filesystem.root. A
// client's profile would otherwise name a directory of the server's host
// whose files the jail shows; a served profile may set it, and a text
// that extends that profile gets it.
func RefuseRoot(name string, text []byte) error {
	doc, _, _, err := decodeDocument(text)
	if err != nil || doc.Filesystem.Root == nil {
		return nil // Parse reports what does not decode
	}
	return positioned(name, text, "filesystem.root", fmt.Sprintf("a client's profile cannot choose the jail's root directory (%q is a directory of the server's host); serve a profile that sets it (tooljail serve --profile FILE) and extend that", *doc.Filesystem.Root))
}

package toolchain

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// FS is the caller's view of the host's files, read by absolute host path.
// Detection only reads: it never runs a program of the host.
type FS interface {
	Lstat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
	ReadFile(name string) ([]byte, error)
	ReadDir(name string) ([]fs.DirEntry, error)
}

// Host is the host's own file system.
func Host() FS { return dirFS("/") }

// Under reads the host path P as root/P: table tests build a stand-in
// layout in a temporary directory, absolute symlinks in it included.
func Under(root string) FS { return dirFS(root) }

type dirFS string

func (d dirFS) p(name string) string { return filepath.Join(string(d), name) }

func (d dirFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(d.p(name)) }
func (d dirFS) Readlink(name string) (string, error)       { return os.Readlink(d.p(name)) }
func (d dirFS) ReadFile(name string) ([]byte, error)       { return os.ReadFile(d.p(name)) }
func (d dirFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(d.p(name)) }

// maxLinks bounds the symlinks one resolution follows, as the kernel's
// ELOOP does.
const maxLinks = 40

var errLoop = errors.New("too many levels of symbolic links")

// realpath is p with every symlink replaced by what it names, read
// through fsys one component at a time (so a test tree's absolute
// symlinks stay in the tree).
func realpath(fsys FS, p string) (string, error) {
	links := 0
	return resolve(fsys, path.Clean(p), &links)
}

func resolve(fsys FS, p string, links *int) (string, error) {
	out := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			out = path.Dir(out)
			continue
		}
		next := path.Join(out, name)
		fi, err := fsys.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			out = next
			continue
		}
		if *links++; *links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: errLoop}
		}
		t, err := fsys.Readlink(next)
		if err != nil {
			return "", err
		}
		if !path.IsAbs(t) {
			t = path.Join(out, t)
		}
		rest = append(strings.Split(strings.TrimPrefix(path.Clean(t), "/"), "/"), rest...)
		out = "/"
	}
	return out, nil
}

// elements are the paths running p goes through: p itself (its
// directory resolved), then each symlink's target (its directory
// resolved), up to the file that is run.
func elements(fsys FS, p string) ([]string, error) {
	var out []string
	for range maxLinks {
		dir, err := realpath(fsys, path.Dir(p))
		if err != nil {
			return nil, err
		}
		e := path.Join(dir, path.Base(p))
		out = append(out, e)
		fi, err := fsys.Lstat(e)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return nil, &fs.PathError{Op: "run", Path: e, Err: errors.New("not a regular file")}
			}
			return out, nil
		}
		t, err := fsys.Readlink(e)
		if err != nil {
			return nil, err
		}
		if !path.IsAbs(t) {
			t = path.Join(dir, t)
		}
		p = path.Clean(t)
	}
	return nil, &fs.PathError{Op: "resolve", Path: p, Err: errLoop}
}

// exists says whether p (symlinks followed) is there, and a directory
// when dir.
func exists(fsys FS, p string, dir bool) bool {
	r, err := realpath(fsys, p)
	if err != nil {
		return false
	}
	fi, err := fsys.Lstat(r)
	return err == nil && (!dir || fi.IsDir())
}

// readFile reads p, symlinks followed.
func readFile(fsys FS, p string) ([]byte, error) {
	r, err := realpath(fsys, p)
	if err != nil {
		return nil, err
	}
	return fsys.ReadFile(r)
}

// lookPath finds name as exec.LookPath would in the caller's PATH: the
// first entry holding an executable regular file of that name (symlinks
// followed). Relative entries, which name the caller's directory of the
// moment, are skipped, as Go's exec.LookPath refuses them.
func lookPath(fsys FS, name, pathList string) (string, error) {
	for _, dir := range filepath.SplitList(pathList) {
		if !path.IsAbs(dir) {
			continue
		}
		p := path.Join(dir, name)
		r, err := realpath(fsys, p)
		if err != nil {
			continue
		}
		fi, err := fsys.Lstat(r)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fs.ErrNotExist
}

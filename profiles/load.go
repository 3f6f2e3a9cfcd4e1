package profiles

import (
	"embed"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tooljail/tooljail/hostpath"
)

// shipped holds the profiles built into the binary.
//
//go:embed *.toml
var shipped embed.FS

// maxDepth bounds an extends chain; real chains are two or three deep.
const maxDepth = 8

// ref names one profile to read: a shipped one or a file.
type ref struct {
	shipped bool
	id      string // shipped name, or absolute file path
	display string // how errors name it
}

// isPath says whether a profile reference is a file path rather than a
// shipped name.
func isPath(s string) bool {
	return strings.Contains(s, "/") || strings.HasSuffix(s, ".toml")
}

// Load reads a shipped profile by name ("default") or a profile file (a
// reference containing '/' or ending in ".toml"), follows its extends chain
// and returns the resolved profile, with every scalar set. An error is one
// line.
//
// Each profile file is opened once, by the rules of every host path
// tooljail uses (package hostpath: no symlink a jailed run could have
// planted), read from that descriptor (a regular file of at most MaxSize),
// and kept open (Files) so that the jail can protect it; Close releases
// them.
func Load(nameOrPath string) (*Profile, error) {
	p, err := loadRef(nameOrPath)
	return p, oneLine(err)
}

func loadRef(nameOrPath string) (*Profile, error) {
	var r ref
	if isPath(nameOrPath) {
		abs, err := absPath(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", nameOrPath, err)
		}
		r = ref{id: abs, display: nameOrPath}
	} else {
		var err error
		if r, err = shippedRef(nameOrPath); err != nil {
			return nil, err
		}
	}
	p, err := load(r, nil)
	if err != nil {
		return nil, err
	}
	p.Name = nameOrPath
	if r.shipped {
		p.Source = "embedded:" + r.id + ".toml"
	} else {
		p.Source = r.id
	}
	return p, nil
}

// absPath makes p absolute against the kernel's current directory, not
// $PWD: a $PWD through a symlink would have hostpath refuse the path.
func absPath(p string) (string, error) {
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	wd, err := unix.Getwd()
	if err != nil {
		return "", fmt.Errorf("current directory: %w", err)
	}
	return filepath.Join(wd, p), nil
}

// List returns the shipped profiles, sorted by name.
func List() []Info {
	entries, _ := shipped.ReadDir(".")
	var out []Info
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".toml")
		info := Info{Name: name}
		// Every shipped profile is checked by the tests; a broken one still
		// shows up here, and Load reports why.
		if data, err := shipped.ReadFile(e.Name()); err == nil {
			if p, _, err := decode(e.Name(), data); err == nil && p.Description != nil {
				info.Description = *p.Description
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func shippedNames() []string {
	var names []string
	for _, i := range List() {
		names = append(names, i.Name)
	}
	return names
}

func shippedRef(name string) (ref, error) {
	if _, err := shipped.Open(name + ".toml"); err != nil || !isPlainName(name) {
		return ref{}, fmt.Errorf("profile %q: no shipped profile by that name (shipped: %s; a file needs a '/' or a .toml suffix, e.g. ./%s.toml)",
			name, strings.Join(shippedNames(), ", "), name)
	}
	return ref{shipped: true, id: name, display: "profiles/" + name + ".toml"}, nil
}

func isPlainName(name string) bool {
	return name != "" && path.Base(name) == name && name != "." && name != ".."
}

// load reads r and its ancestors. chain holds the ids of the profiles that
// extend r, to detect cycles.
func load(r ref, chain []ref) (*Profile, error) {
	for i, c := range chain {
		if c.id == r.id && c.shipped == r.shipped {
			var names []string
			for _, c := range chain[i:] {
				names = append(names, c.display)
			}
			return nil, fmt.Errorf("profile %s: extends cycle: %s -> %s", chain[0].display, strings.Join(names, " -> "), r.display)
		}
	}
	if len(chain) >= maxDepth {
		return nil, fmt.Errorf("profile %s: extends chain deeper than %d profiles", chain[0].display, maxDepth)
	}
	data, file, err := r.read()
	if err != nil {
		return nil, err
	}
	p, err := resolve(r.display, data, true, func(extends string) (*Profile, error) {
		parentRef, err := r.parent(extends)
		if err != nil {
			return nil, extendsError{err}
		}
		return load(parentRef, append(chain, r))
	})
	if err != nil {
		if file != nil {
			file.Close()
		}
		return nil, err
	}
	if file != nil {
		p.files = append(p.files, file)
	}
	return p, nil
}

// read returns r's content and, for a file, the descriptor it was read
// from.
func (r ref) read() ([]byte, *hostpath.Object, error) {
	if r.shipped {
		data, err := shipped.ReadFile(r.id + ".toml")
		if err != nil {
			return nil, nil, fmt.Errorf("profile %s: %w", r.display, err)
		}
		return data, nil, nil
	}
	obj, err := hostpath.Open(r.id, hostpath.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("profile %s: %w", r.display, err)
	}
	data, err := readObject(obj)
	if err != nil {
		obj.Close()
		return nil, nil, fmt.Errorf("profile %s: %w", r.display, err)
	}
	return data, obj, nil
}

// readObject reads a regular file held as an O_PATH descriptor, which
// cannot be read itself. It is reopened through /proc/self/fd/N, the
// kernel's way to reopen a descriptor: that magic link names this very
// descriptor, so no path of the host is looked up again (and O_NOFOLLOW
// cannot be used: the kernel refuses it on the magic link itself). The
// reopened file is checked to be the same regular file all the same, and
// opened O_NONBLOCK, so that no special file can hang the load. At most
// MaxSize bytes are read.
func readObject(o *hostpath.Object) ([]byte, error) {
	if err := checkProfileFile(o.Path, &o.Stat); err != nil {
		return nil, err
	}
	fd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(int(o.File.Fd())), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err == unix.ENOENT {
		return nil, fmt.Errorf("reopen %s for reading: /proc is not mounted; tooljail needs it", o.Path)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: o.Path, Err: err}
	}
	f := os.NewFile(uintptr(fd), o.Path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", o.Path, err)
	}
	if st.Dev != o.Stat.Dev || st.Ino != o.Stat.Ino {
		return nil, fmt.Errorf("reopening %s gave another file: is /proc this system's procfs?", o.Path)
	}
	if err := checkProfileFile(o.Path, &st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", o.Path, err)
	}
	if len(data) > MaxSize {
		return nil, tooLarge(o.Path)
	}
	return data, nil
}

// checkProfileFile refuses anything but a regular file of at most
// MaxSize bytes: a FIFO or a device would block or never end.
func checkProfileFile(path string, st *unix.Stat_t) error {
	if typ := st.Mode & unix.S_IFMT; typ != unix.S_IFREG {
		return fmt.Errorf("%s is %s, not a regular file; give the path of a profile file", path, fileType(typ))
	}
	if st.Size > MaxSize {
		return tooLarge(path)
	}
	return nil
}

// fileType names a file type (the S_IFMT bits of a mode) for messages.
func fileType(typ uint32) string {
	switch typ {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO (named pipe)"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return fmt.Sprintf("of type %#o", typ)
}

// parent resolves the `extends` value of r: a shipped name, or (from a file
// profile only) a path relative to r's directory.
func (r ref) parent(extends string) (ref, error) {
	if !isPath(extends) {
		return shippedRef(extends)
	}
	if r.shipped {
		return ref{}, fmt.Errorf("%q: a shipped profile can only extend shipped profiles", extends)
	}
	p := extends
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(r.id), p)
	}
	display := p
	if !filepath.IsAbs(extends) {
		display = filepath.Join(filepath.Dir(r.display), extends)
	}
	return ref{id: filepath.Clean(p), display: display}, nil
}

// unsetKeys lists the dotted keys of nil scalar pointers below v, and of
// the limits missing from [limits]. The description is optional.
// emptyLists makes every list key a root profile left out an empty list:
// left out means none, as `[]` does, and Marshal writes `[]`, so that a
// profile and its printed form load the same (FuzzLoad found the
// difference: a nil list against an empty one).
func emptyLists(v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if key := t.Field(i).Tag.Get("toml"); key == "" || key == "-" {
			continue
		}
		switch f := v.Field(i); f.Kind() {
		case reflect.Slice:
			if f.IsNil() {
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			}
		case reflect.Struct:
			emptyLists(f)
		}
	}
}

func unsetKeys(v reflect.Value, prefix string) []string {
	var out []string
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key := t.Field(i).Tag.Get("toml")
		if key == "" || key == "-" || key == "description" {
			continue
		}
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Pointer:
			if f.IsNil() {
				out = append(out, prefix+key)
			}
		case reflect.Struct:
			out = append(out, unsetKeys(f, prefix+key+".")...)
		case reflect.Map:
			if l, ok := f.Interface().(Limits); ok {
				out = append(out, l.unset(prefix+key+".")...)
			}
		}
	}
	return out
}

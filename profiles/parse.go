package profiles

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/tooljail/tooljail/hostpath"
	"github.com/tooljail/tooljail/internal/units"
)

// MaxSize is the largest profile tooljail reads, a file (Load) or a text
// (Parse): a real profile is a few KiB, and the bound keeps what is not
// one (a path to /dev/zero, a request to a server that is mostly
// profile_toml) from costing more than reading that much.
const MaxSize = 1 << 20

// Parse parses text, a whole profile as a file would hold it, with the
// strictness of Load: an unknown key, a value of the wrong type or one
// that does not parse is an error "NAME:LINE:COL: key: ...", on one line.
// name names the text in errors and becomes the profile's Name.
//
// Parse reads nothing from the host, so what text may say is narrower
// than a file: it must extend a shipped profile (extends = "default"),
// never a file, which it would have no directory to find in, and it is at
// most MaxSize bytes. The result is resolved, as Load's is, and holds no
// file (Files is nil).
func Parse(name string, text []byte) (*Profile, error) {
	return Bases(nil).Parse(name, text)
}

// Bases are resolved profiles, by name, that a parsed text may extend
// besides the shipped ones: a server's served profiles (Load's results)
// under the names it serves them by, which may be file paths. A base is
// never changed by Parse.
type Bases map[string]*Profile

// Parse is profiles.Parse where `extends` may also name one of b (b's
// entry wins over a shipped profile of the same name). A text that
// extends a base read from files shares that base's Files, so that a jail
// built from it protects them too; closing the parsed profile leaves them
// open.
func (b Bases) Parse(name string, text []byte) (*Profile, error) {
	p, err := resolve(name, text, false, b.parent)
	if err != nil {
		return nil, oneLine(err)
	}
	p.Name = name
	p.Source = "text:" + name
	return p, nil
}

// parent resolves the `extends` of a text: one of b, or a shipped name.
func (b Bases) parent(extends string) (*Profile, error) {
	if base, ok := b[extends]; ok {
		return base.clone(), nil
	}
	if isPath(extends) {
		return nil, extendsError{fmt.Errorf("%q is a file: a profile given as text can only extend %s", extends, b.choices())}
	}
	r, err := shippedRef(extends)
	if err != nil {
		return nil, extendsError{fmt.Errorf("%q: no such profile; a profile given as text can only extend %s", extends, b.choices())}
	}
	return load(r, nil)
}

// choices names what a text may extend, for errors.
func (b Bases) choices() string {
	s := "a shipped profile (" + strings.Join(shippedNames(), ", ") + ")"
	if len(b) == 0 {
		return s
	}
	names := make([]string, 0, len(b))
	for n := range b {
		names = append(names, n)
	}
	sort.Strings(names)
	return s + " or one of " + strings.Join(names, ", ")
}

// resolve is what Load and Parse share: it checks data's size, decodes it
// strictly (display names it in errors) and lays it over the profile its
// `extends` names, which parent returns, resolved and the caller's own to
// change. A profile without `extends` is a root, allowed when rootOK, and
// must set every key. An extendsError from parent is shown at the line of
// `extends`; any other error (a parent that does not load) is returned as
// it is.
func resolve(display string, data []byte, rootOK bool, parent func(extends string) (*Profile, error)) (*Profile, error) {
	if len(data) > MaxSize {
		return nil, tooLarge(display)
	}
	p, extends, err := decode(display, data)
	if err != nil {
		return nil, err
	}
	if extends == nil {
		if !rootOK {
			return nil, &Error{File: display, Key: "extends", Msg: `missing; a profile given as text must extend another, e.g. extends = "default"`}
		}
		if missing := unsetKeys(reflect.ValueOf(p).Elem(), ""); len(missing) > 0 {
			return nil, &Error{File: display, Msg: fmt.Sprintf(
				"a profile without `extends` must set every key, missing: %s; add extends = \"default\" to inherit them",
				strings.Join(missing, ", "))}
		}
		emptyLists(reflect.ValueOf(p).Elem())
		return p, nil
	}
	base, err := parent(*extends)
	if err != nil {
		if e, ok := err.(extendsError); ok {
			return nil, positioned(display, data, "extends", e.err.Error())
		}
		return nil, err
	}
	base.merge(p)
	// A child may raise a limit over its parent's ceiling, or set a
	// ceiling below its parent's limit: only the merged profile tells.
	if err := base.checkLimitsMax(); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			return nil, positioned(display, data, ke.Key, ke.Err.Error())
		}
		return nil, err
	}
	return base, nil
}

// extendsError is an `extends` value that names nothing the reader may
// extend.
type extendsError struct{ err error }

func (e extendsError) Error() string { return e.err.Error() }

func tooLarge(name string) error {
	return fmt.Errorf("%s: larger than %s; a profile is a small TOML file", name, units.FormatSize(MaxSize))
}

// clone is a copy of p that shares nothing with it but its files, which
// stay p's: laying a child over the copy leaves p as it was.
func (p *Profile) clone() *Profile {
	c := &Profile{Name: p.Name, Source: p.Source}
	c.merge(p)
	c.files = append([]*hostpath.Object(nil), p.files...)
	c.borrowed = len(c.files) > 0
	return c
}

// IsFile says whether a profile reference names a file (it contains a '/'
// or ends in ".toml") rather than a shipped profile, as Load and --profile
// tell them apart.
func IsFile(ref string) bool { return isPath(ref) }

// ReadFile reads the profile file at path as Load reads it (the rules of
// package hostpath, a regular file of at most MaxSize bytes) and returns
// its text, neither decoded nor followed along its extends: what a client
// sends a server to parse (tooljail run --server --profile FILE). A
// relative path is taken against the current directory.
func ReadFile(path string) ([]byte, error) {
	abs, err := absPath(path)
	if err != nil {
		return nil, oneLine(fmt.Errorf("profile %s: %w", path, err))
	}
	data, obj, err := ref{id: abs, display: path}.read()
	if obj != nil {
		obj.Close()
	}
	return data, oneLine(err)
}

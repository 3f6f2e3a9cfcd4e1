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
	"strings"
)

// shipped holds the profiles built into the binary.
//
//go:embed *.toml
var shipped embed.FS

// maxDepth bounds an extends chain; real chains are two or three deep.
const maxDepth = 8

// maxFileSize bounds what Load reads from a profile file (a path to
// /dev/zero must fail, not hang).
const maxFileSize = 1 << 20

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
// and returns the resolved profile, with every scalar set.
func Load(nameOrPath string) (*Profile, error) {
	var r ref
	if isPath(nameOrPath) {
		abs, err := filepath.Abs(nameOrPath)
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
	data, err := r.read()
	if err != nil {
		return nil, err
	}
	p, extends, err := decode(r.display, data)
	if err != nil {
		return nil, err
	}
	if extends == nil {
		if missing := unsetKeys(reflect.ValueOf(p).Elem(), ""); len(missing) > 0 {
			return nil, &Error{File: r.display, Msg: fmt.Sprintf(
				"a profile without `extends` must set every key, missing: %s; add extends = \"default\" to inherit them",
				strings.Join(missing, ", "))}
		}
		return p, nil
	}
	parentRef, err := r.parent(*extends)
	if err != nil {
		return nil, positioned(r.display, data, "extends", err.Error())
	}
	parent, err := load(parentRef, append(chain, r))
	if err != nil {
		return nil, err
	}
	parent.merge(p)
	return parent, nil
}

func (r ref) read() ([]byte, error) {
	if r.shipped {
		data, err := shipped.ReadFile(r.id + ".toml")
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", r.display, err)
		}
		return data, nil
	}
	f, err := os.Open(r.id)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", r.display, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", r.display, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("profile %s: larger than %d bytes; not a profile", r.display, maxFileSize)
	}
	return data, nil
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

// unsetKeys lists the dotted keys of nil scalar pointers below v. The
// description is optional.
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
		}
	}
	return out
}

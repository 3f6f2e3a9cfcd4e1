// Command mkdist writes tooljail's release archives reproducibly: the
// tarball of one target (tooljail-VERSION-linux-ARCH.tar.gz) and its .deb
// (tooljail_VERSION_ARCH.deb). The same inputs give the same bytes: entries
// sorted, every time SOURCE_DATE_EPOCH, owner and group 0 with no names,
// modes 0644/0755 whatever the umask, gzip with no name or time.
// `make dist` runs it; see docs/install.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sources is what a release carries besides the binary, read from the
// repository (and the completions `tooljail completion` printed).
type sources struct {
	Readme, License []byte
	Examples        []entry // names relative to examples/
	Man             []entry // names like "man1/tooljail.1"
	Completions     map[string][]byte
}

// completionFiles names the files of -completions DIR, by shell.
var completionFiles = map[string]string{
	"bash": "tooljail.bash",
	"zsh":  "_tooljail",
	"fish": "tooljail.fish",
}

func readSources(src, completions string) (*sources, error) {
	s := &sources{Completions: map[string][]byte{}}
	var err error
	if s.Readme, err = os.ReadFile(filepath.Join(src, "README.md")); err != nil {
		return nil, err
	}
	if s.License, err = os.ReadFile(filepath.Join(src, "LICENSE")); err != nil {
		return nil, err
	}
	if s.Examples, err = readTree(filepath.Join(src, "examples")); err != nil {
		return nil, err
	}
	// The man pages are generated into docs/man (tooljail.1, tooljail-run.1,
	// ..., tooljail-profile.5): whatever sections are there.
	pages, err := filepath.Glob(filepath.Join(src, "docs", "man", "*.[1-8]"))
	if err != nil {
		return nil, err
	}
	sort.Strings(pages)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(p)
		s.Man = append(s.Man, entry{Name: "man" + name[len(name)-1:] + "/" + name, Mode: 0o644, Data: b})
	}
	// All three completions, always: a release carries them.
	if completions == "" {
		return nil, errors.New("-completions DIR is required (packaging/completions.sh writes it)")
	}
	for shell, name := range completionFiles {
		b, err := os.ReadFile(filepath.Join(completions, name))
		if err != nil {
			return nil, err
		}
		s.Completions[shell] = b
	}
	return s, nil
}

// readTree lists the regular files under dir, names relative to it.
// Anything else (a symlink, a device) is refused: an archive must not
// depend on where it points.
func readTree(dir string) ([]entry, error) {
	var files []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file; a release carries only files", p)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, entry{Name: filepath.ToSlash(rel), Mode: normMode(uint32(info.Mode().Perm())), Data: b})
		return nil
	})
	return files, err
}

// tarballFiles lays a target's files out as the tarball holds them, under
// tooljail-VERSION-linux-ARCH/ (a prefix the caller adds).
func tarballFiles(s *sources, bin []byte) []entry {
	files := []entry{
		{Name: "bin/tooljail", Mode: 0o755, Data: bin},
		{Name: "README.md", Mode: 0o644, Data: s.Readme},
		{Name: "LICENSE", Mode: 0o644, Data: s.License},
	}
	for _, e := range s.Examples {
		files = append(files, entry{Name: "examples/" + e.Name, Mode: e.Mode, Data: e.Data})
	}
	for _, m := range s.Man {
		files = append(files, entry{Name: "share/man/" + m.Name, Mode: 0o644, Data: m.Data})
	}
	for shell, p := range map[string]string{
		"bash": "share/bash-completion/completions/tooljail",
		"zsh":  "share/zsh/site-functions/_tooljail",
		"fish": "share/fish/vendor_completions.d/tooljail.fish",
	} {
		if b, ok := s.Completions[shell]; ok {
			files = append(files, entry{Name: p, Mode: 0o644, Data: b})
		}
	}
	return files
}

// debCopyright is /usr/share/doc/tooljail/copyright, machine-readable
// (DEP-5); Debian keeps the Apache licence's text in common-licenses.
const debCopyright = `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: tooljail
Source: https://github.com/tooljail/tooljail

Files: *
Copyright: the tooljail authors
License: Apache-2.0
 Licensed under the Apache License, Version 2.0 (the "License");
 you may not use this file except in compliance with the License.
 You may obtain a copy of the License at
 .
 http://www.apache.org/licenses/LICENSE-2.0
 .
 Unless required by applicable law or agreed to in writing, software
 distributed under the License is distributed on an "AS IS" BASIS,
 WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 See the License for the specific language governing permissions and
 limitations under the License.
 .
 On Debian systems, the complete text of the Apache License, Version 2.0
 can be found in "/usr/share/common-licenses/Apache-2.0".
`

// debFiles lays a target's files out as the .deb installs them (names
// relative to /): man pages gzipped as Debian keeps them, completions where
// bash-completion, zsh and fish look for packaged ones.
func debFiles(s *sources, bin []byte) ([]entry, error) {
	files := []entry{
		{Name: "usr/bin/tooljail", Mode: 0o755, Data: bin},
		{Name: "usr/share/doc/tooljail/copyright", Mode: 0o644, Data: []byte(debCopyright)},
	}
	for _, e := range s.Examples {
		files = append(files, entry{Name: "usr/share/doc/tooljail/examples/" + e.Name, Mode: 0o644, Data: e.Data})
	}
	for _, m := range s.Man {
		z, err := gzipBytes(m.Data)
		if err != nil {
			return nil, err
		}
		files = append(files, entry{Name: "usr/share/man/" + m.Name + ".gz", Mode: 0o644, Data: z})
	}
	for shell, p := range map[string]string{
		"bash": "usr/share/bash-completion/completions/tooljail",
		"zsh":  "usr/share/zsh/vendor-completions/_tooljail",
		"fish": "usr/share/fish/vendor_completions.d/tooljail.fish",
	} {
		if b, ok := s.Completions[shell]; ok {
			files = append(files, entry{Name: p, Mode: 0o644, Data: b})
		}
	}
	return files, nil
}

// sourceDateEpoch is the archives' one time: -epoch, else SOURCE_DATE_EPOCH.
func sourceDateEpoch(flagValue string) (time.Time, error) {
	v := flagValue
	if v == "" {
		v = os.Getenv("SOURCE_DATE_EPOCH")
	}
	if v == "" {
		return time.Time{}, errors.New("no time for the archive entries: pass -epoch or set SOURCE_DATE_EPOCH (make dist uses the commit's time, git log -1 --format=%ct)")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970", v)
	}
	return time.Unix(n, 0).UTC(), nil
}

// writeFileAtomic writes b to name through a temporary file beside it, so
// a failed build leaves no half archive that looks whole.
func writeFileAtomic(name string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "mkdist: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("mkdist", flag.ContinueOnError)
	kind := fl.String("kind", "", "tarball or deb")
	version := fl.String("version", "", "the release version (the VERSION file)")
	arch := fl.String("arch", "", "amd64 or arm64")
	bin := fl.String("bin", "", "the tooljail binary of that target")
	src := fl.String("src", ".", "the repository: README.md, LICENSE, examples/, docs/man/")
	completions := fl.String("completions", "", "a directory of tooljail.bash, _tooljail and tooljail.fish; empty for none")
	epoch := fl.String("epoch", "", "the entries' time, seconds since 1970 (default $SOURCE_DATE_EPOCH)")
	maintainer := fl.String("maintainer", "tooljail maintainers <maintainers@tooljail.invalid>", "the .deb's Maintainer")
	out := fl.String("o", "", "the archive to write")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *version == "" || *bin == "" || *out == "" || fl.NArg() > 0 {
		return errors.New("usage: mkdist -kind tarball|deb -version V -arch amd64|arm64 -bin PATH -o OUT [-src DIR] [-completions DIR] [-epoch N]")
	}
	if *arch != "amd64" && *arch != "arm64" {
		return fmt.Errorf("-arch %q: want amd64 or arm64", *arch)
	}
	if strings.ContainsAny(*version, " /_") {
		return fmt.Errorf("-version %q: no spaces, slashes or underscores", *version)
	}
	mtime, err := sourceDateEpoch(*epoch)
	if err != nil {
		return err
	}
	s, err := readSources(*src, *completions)
	if err != nil {
		return err
	}
	binBytes, err := os.ReadFile(*bin)
	if err != nil {
		return err
	}
	var b []byte
	switch *kind {
	case "tarball":
		prefix := path.Join(fmt.Sprintf("tooljail-%s-linux-%s", *version, *arch)) + "/"
		b, err = tarGz(prefix, "", tarballFiles(s, binBytes), mtime)
	case "deb":
		var files []entry
		if files, err = debFiles(s, binBytes); err == nil {
			b, err = deb(*version, *arch, *maintainer, files, mtime)
		}
	default:
		return fmt.Errorf("-kind %q: want tarball or deb", *kind)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *out, err)
	}
	return writeFileAtomic(*out, b)
}

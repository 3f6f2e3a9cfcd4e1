package tools

import (
	"fmt"
	"strings"
)

// Merge joins the tools of several files (`--tools FILE`, repeated) into
// one File, in the order given. A tool name declared in two files is an
// error naming both: a call must mean one tool. Each tool keeps the file
// it was declared in (Tool.File), against which its profile file is
// found.
func Merge(files ...*File) (*File, error) {
	if len(files) == 1 {
		return files[0], nil
	}
	out := &File{}
	names := make([]string, len(files))
	from := map[string]string{}
	var errs []string
	for i, f := range files {
		names[i] = f.Name
		for _, t := range f.Tools {
			if prev, ok := from[t.Name]; ok {
				errs = append(errs, fmt.Sprintf("tool %s is declared in %s and again in %s; a name may be declared once: rename or remove one", t.Name, prev, f.Name))
				continue
			}
			from[t.Name] = f.Name
			out.Tools = append(out.Tools, t)
		}
	}
	if errs != nil {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	out.Name = strings.Join(names, ", ")
	return out, nil
}

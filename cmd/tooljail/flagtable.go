package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tooljail/tooljail/internal/completion"
)

// flagDef is one row of a command's flag table: the one place a flag is
// described. The parser (flagSetOf), --help (printFlags), docs/cli.md's
// flag tables (docs_test.go checks them), the man pages
// (manpage_test.go) and the completions (completionFlags) are all made
// from these rows.
type flagDef struct {
	name  string // long name, without dashes: "memory"
	short string // a one-letter alias, "q"; "" for none
	// value names the flag's value in --help and the docs ("SIZE",
	// "NAME|FILE"); "" for a boolean flag, which takes none.
	value string
	// repeat: each value adds to the list; a flag that is not repeatable
	// and takes a value may be given once (scalar).
	repeat bool
	def    string // the default --help names, "" for none (or one help explains)
	help   string
	// key is the profile key the flag sets or adds to
	// ("limits.memory"), "" for a flag with none.
	key string
	// complete is what the value completes to; nil: paths when value
	// names a file or directory, else nothing (valueCompletion).
	complete func() completion.Value
	set      flag.Value // where the parser puts the value
}

// tableValue is a parsed flag's value with its table row, so that what
// reads a FlagSet made by flagSetOf reads the row, not a usage string.
type tableValue struct {
	flag.Value
	row *flagDef
}

func (v tableValue) IsBoolFlag() bool { return v.row.value == "" }

// flagSetOf is the parser of a command's flag table: each row's long name
// and alias, its value put where the row says.
func flagSetOf(name string, rows []flagDef) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for i := range rows {
		r := &rows[i]
		fs.Var(tableValue{r.set, r}, r.name, r.help)
		if r.short != "" {
			fs.Var(tableValue{r.set, r}, r.short, "same as --"+r.name)
		}
	}
	return fs
}

// flagRows is the rows fs was made from, in name order as --help lists
// them, each once (an alias is its long flag's row).
func flagRows(fs *flag.FlagSet) []*flagDef {
	var rows []*flagDef
	seen := map[*flagDef]bool{}
	fs.VisitAll(func(f *flag.Flag) {
		if r := rowOf(f); r != nil && !seen[r] {
			seen[r] = true
			rows = append(rows, r)
		}
	})
	return rows
}

// rowOf is f's row in its flag table, nil for a flag made otherwise.
func rowOf(f *flag.Flag) *flagDef {
	if v, ok := f.Value.(tableValue); ok {
		return v.row
	}
	return nil
}

// givenFlags says, once fs has parsed, whether the flag of a row (its long
// name) was given: a boolean one given true.
func givenFlags(fs *flag.FlagSet) func(name string) bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		if r := rowOf(f); r != nil && (r.value != "" || f.Value.String() == "true") {
			given[r.name] = true
		}
	})
	return func(name string) bool { return given[name] }
}

// synopsis is the flag as --help and the man pages show it: "--memory
// SIZE", "-q, --quiet".
func (r *flagDef) synopsis() string {
	s := "--" + r.name
	if r.short != "" {
		s = "-" + r.short + ", " + s
	}
	if r.value != "" {
		s += " " + r.value
	}
	return s
}

// helpText is the row's help with its default, as --help shows it.
func (r *flagDef) helpText() string {
	if r.def == "" {
		return r.help
	}
	return fmt.Sprintf("%s (default %q)", r.help, r.def)
}

// docCell is the flag as the first cell of a docs/cli.md flag table
// shows it: "`--memory SIZE`", "`-q`, `--quiet`", a | escaped.
func (r *flagDef) docCell() string {
	s := "`--" + r.name
	if r.value != "" {
		s += " " + strings.ReplaceAll(r.value, "|", `\|`)
	}
	s += "`"
	if r.short != "" {
		s = "`-" + r.short + "`, " + s
	}
	return s
}

// valueCompletion is what the row's value completes to.
func (r *flagDef) valueCompletion() completion.Value {
	if r.complete != nil {
		return r.complete()
	}
	switch r.value {
	case "FILE", "PATH", "PATH[:DEST]", "SOCKET":
		return completion.Value{Files: true}
	case "DIR":
		return completion.Value{Dirs: true}
	}
	return completion.Value{}
}

// boolFlag is a boolean flag's destination.
type boolFlag struct{ p *bool }

func (b boolFlag) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}

func (b boolFlag) Set(v string) error {
	x, err := strconv.ParseBool(v)
	if err != nil {
		return err
	}
	*b.p = x
	return nil
}

// funcFlag is a destination that takes each value through a function: a
// repeatable flag's append, a limit's check.
type funcFlag func(string) error

func (funcFlag) String() string       { return "" }
func (f funcFlag) Set(v string) error { return f(v) }

// once binds a scalar flag: s takes one value, checked by check (nil: any).
func once(s *scalar, check func(string) error) flag.Value {
	s.check = check
	return s
}

// appendTo binds a repeatable flag: each value, checked, is added to dst.
func appendTo(dst *[]string, check func(string) error) flag.Value {
	return funcFlag(func(v string) error {
		if check != nil {
			if err := check(v); err != nil {
				return err
			}
		}
		*dst = append(*dst, v)
		return nil
	})
}

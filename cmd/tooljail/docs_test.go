package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tooljail/tooljail/hostprobe"
	"github.com/tooljail/tooljail/jail"
	"github.com/tooljail/tooljail/profiles"
	"github.com/tooljail/tooljail/report"
	"github.com/tooljail/tooljail/tools/call"
)

// The docs cannot drift from the code: every flag and subcommand --help
// lists is in docs/cli.md, every field a report can hold in
// docs/report.md, every profile key in docs/profiles.md. A name counts only
// in code spans (`--memory`, `limits.memory_bytes`), where the docs name
// things on purpose.

// readDoc returns a document of the repository, docs/NAME.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is the part of doc under the heading that starts with heading,
// up to the next heading of the same or a higher level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("no heading %q", heading)
	}
	level := strings.IndexFunc(heading, func(r rune) bool { return r != '#' })
	rest := doc[i+1+len(heading):]
	next := regexp.MustCompile(`\n#{1,` + strconv.Itoa(level) + `} `).FindStringIndex(rest)
	if next != nil {
		rest = rest[:next[0]]
	}
	return rest
}

// helpFlags lists the flags a --help text shows: "--name" and "-x" at the
// start of its flag lines.
func helpFlags(help string) []string {
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^  (-[a-z])?(?:, )?(--[a-z][a-z0-9-]*)?`).FindAllStringSubmatch(help, -1) {
		for _, f := range m[1:] {
			if f != "" {
				flags = append(flags, f)
			}
		}
	}
	return flags
}

func help(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := dispatch(append(args, "--help"), &stdout, &stderr); code != 0 {
		t.Fatalf("%v --help: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

func TestDocsListEveryFlag(t *testing.T) {
	for _, sub := range []struct {
		name string
		fs   *flag.FlagSet
		doc  string // the page that documents the flags
	}{
		{"run", newRunFlagSet(&runFlags{}), "cli.md"},
		{"check", newCheckFlagSet(new(bool)), "cli.md"},
		{"serve", newServeFlagSet(&serveFlags{}), "serve.md"},
		{"tools", newToolsCallFlagSet(&toolsCallFlags{}), "cli.md"},
		{"audit", newAuditFlagSet(&auditFlags{}), "cli.md"},
		{"mcp", newMCPFlagSet(&mcpFlags{}), "cli.md"},
		{"version", newVersionFlagSet(new(bool)), "cli.md"},
	} {
		flags := helpFlags(help(t, sub.name))
		n := 0
		sub.fs.VisitAll(func(*flag.Flag) { n++ })
		if len(flags) != n {
			t.Errorf("%s --help lists %d flags %q, the flag set has %d", sub.name, len(flags), flags, n)
		}
		doc := section(t, readDoc(t, sub.doc), "## `tooljail "+sub.name+"`")
		for _, f := range flags {
			if !regexp.MustCompile("`" + regexp.QuoteMeta(f) + "[ `=]").MatchString(doc) {
				t.Errorf("docs/%s, tooljail %s: flag %s is not documented (as `%s ...`)", sub.doc, sub.name, f, f)
			}
		}
	}
}

func TestDocsListEverySubcommand(t *testing.T) {
	cli := readDoc(t, "cli.md")
	subs := regexp.MustCompile(`(?m)^  (tooljail [a-z]+(?: [a-z]+)?)`).FindAllStringSubmatch(usage+profileUsage, -1)
	if len(subs) < 6 {
		t.Fatalf("found only %d subcommands in the usage texts", len(subs))
	}
	for _, m := range subs {
		if !strings.Contains(cli, "`"+m[1]) && !strings.Contains(cli, "\n"+m[1]) {
			t.Errorf("docs/cli.md does not document %q", m[1])
		}
	}
}

func TestDocsListEveryExitCode(t *testing.T) {
	codes := section(t, readDoc(t, "cli.md"), "### Exit codes")
	for _, code := range []int{jail.ExitTimeout, jail.ExitSetup, jail.ExitNotExecutable, jail.ExitNotFound} {
		if !strings.Contains(codes, "| `"+strconv.Itoa(code)+"` |") {
			t.Errorf("docs/cli.md, Exit codes: no row for %d", code)
		}
	}
}

func TestDocsListEveryReportField(t *testing.T) {
	reportDoc := readDoc(t, "report.md")
	fields := section(t, reportDoc, "## Fields")
	paths := emittedPaths(t, &jail.Result{})
	if len(paths) < 50 {
		t.Fatalf("only %d report fields found: %q", len(paths), paths)
	}
	for _, p := range paths {
		if !strings.Contains(fields, "`"+p+"`") {
			t.Errorf("docs/report.md, Fields: report field %s is not documented (as `%s`)", p, p)
		}
	}

	// The audit log's line, as report.AppendAudit writes it.
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "audit.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r jail.Result
	fill(reflect.ValueOf(&r).Elem())
	if err := report.AppendAudit(f, &r); err != nil {
		t.Fatal(err)
	}
	line, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	audit := section(t, reportDoc, "## The audit log")
	keys := jsonPaths(t, line)
	if len(keys) < 9 {
		t.Fatalf("only %d audit fields found: %q", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(audit, "`"+k+"`") {
			t.Errorf("docs/report.md, The audit log: field %s is not documented", k)
		}
	}
	// A tool call's line adds its own fields.
	for _, k := range emittedPaths(t, &call.Line{}) {
		if !strings.Contains(audit, "`"+k+"`") {
			t.Errorf("docs/report.md, The audit log: tool call field %s is not documented", k)
		}
	}
}

func TestDocsListEveryCheckField(t *testing.T) {
	doc := section(t, readDoc(t, "cli.md"), "## `tooljail check`")
	var c checkReport
	c.Layers = []hostprobe.Layer{{}}
	for _, p := range emittedPaths(t, &c) {
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/cli.md, tooljail check: --json field %s is not documented", p)
		}
	}
}

func TestDocsListEveryProfileKey(t *testing.T) {
	doc := section(t, readDoc(t, "profiles.md"), "## The keys")
	p, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	keys := append(tomlKeys(reflect.ValueOf(p).Elem(), ""), "extends")
	if len(keys) < 30 {
		t.Fatalf("only %d profile keys found: %q", len(keys), keys)
	}
	for _, k := range keys {
		if !strings.Contains(doc, "`"+k+"`") {
			t.Errorf("docs/profiles.md, The keys: key %s is not documented", k)
		}
	}
}

// emittedPaths is every field path the JSON form of v's type can hold:
// v's type with every field set (so that omitempty drops nothing) is
// marshalled and walked. A path names an object's field with a dot and a
// list's elements with [] ("violations[].kind"); a map is one field, not
// one per key.
func emittedPaths(t *testing.T, v any) []string {
	t.Helper()
	fill(reflect.ValueOf(v).Elem())
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return jsonPaths(t, b)
}

// mapKey marks a map's entry in filled values: its path ends at the map.
const mapKey = "docs-test-map-key"

func jsonPaths(t *testing.T, b []byte) []string {
	t.Helper()
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v[mapKey]; ok {
				paths = append(paths, path)
				return
			}
			for k, e := range v {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(e, p)
			}
		case []any:
			if len(v) > 0 {
				if _, ok := v[0].(map[string]any); ok {
					walk(v[0], path+"[]")
					return
				}
			}
			paths = append(paths, path)
		default:
			paths = append(paths, path)
		}
	}
	walk(doc, "")
	sort.Strings(paths)
	return paths
}

// fill sets every field of v to a value that is not its zero: one
// element in a slice, one entry (mapKey) in a map.
func fill(v reflect.Value) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Unix(1, 0)))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i))
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		k.SetString(mapKey)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// tomlKeys lists the dotted TOML keys of p, a resolved profile or one of
// its tables: a struct field is a table, the [limits] table (a map that a
// root profile such as the default fills with every key) lists its keys,
// anything else is a key.
func tomlKeys(p reflect.Value, prefix string) []string {
	var keys []string
	for i := 0; i < p.NumField(); i++ {
		f := p.Type().Field(i)
		name := strings.Split(f.Tag.Get("toml"), ",")[0]
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		switch v := p.Field(i); {
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, tomlKeys(v, prefix+name+".")...)
		case f.Type == reflect.TypeOf(profiles.Limits{}):
			for _, k := range v.MapKeys() {
				keys = append(keys, prefix+name+"."+k.String())
			}
		default:
			keys = append(keys, prefix+name)
		}
	}
	return keys
}

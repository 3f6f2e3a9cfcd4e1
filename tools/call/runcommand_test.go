package call

import (
	"strings"
	"testing"

	"github.com/tooljail/tooljail/tools"
)

// TestRunCommand calls the generic tool: its argv runs as given (no
// shell), stdin reaches it, a timeout may shorten the file's and not
// lengthen it, its rate holds, and each call has its audit line.
func TestRunCommand(t *testing.T) {
	c, logPath := setup(t)
	f, err := tools.Parse("tools.toml", []byte(`
[run_command]
profile = "default"
limits = { timeout = "20s", memory = "128M" }
rate = { per_minute = 5 }
`))
	if err != nil {
		t.Fatal(err)
	}
	c.File = f
	o := call(t, c, tools.RunCommand, map[string]any{"argv": []any{"printf", "[%s]\n", "a b", "$HOME; echo *", "'x'"}})
	if o.Failed() || text(o.Report.Stdout.Text) != "[a b]\n[$HOME; echo *]\n['x']\n" {
		t.Errorf("argv as given: %+v %q", o, text(o.Report.Stdout.Text))
	}
	if l := o.Report.Limits; l.TimeoutMs != 20000 || l.MemoryBytes != 128<<20 {
		t.Errorf("limits %+v: want the file's", l)
	}
	o, err = c.Call(t.Context(), Request{Tool: tools.RunCommand, Args: map[string]any{"argv": []any{"cat"}, "timeout": "2s"}, Stdin: []byte("in")})
	if err != nil || o.Failed() || text(o.Report.Stdout.Text) != "in" || o.Report.Limits.TimeoutMs != 2000 {
		t.Errorf("stdin and a shorter timeout: %+v %v", o, err)
	}
	o = call(t, c, tools.RunCommand, map[string]any{"argv": []any{"true"}, "timeout": "21s"})
	if o.Decision != "refused: timeout" || o.Report != nil || !strings.Contains(o.Error, `parameter timeout = "21s": refused by rule timeout 20s: above the limit the tool file sets`) {
		t.Errorf("a longer timeout: %+v", o)
	}
	o = call(t, c, tools.RunCommand, map[string]any{"argv": "rm -rf /"})
	if o.Decision != "refused: type array" {
		t.Errorf("argv as a string: %+v", o)
	}
	for i := 0; i < 3; i++ {
		call(t, c, tools.RunCommand, map[string]any{"argv": []any{"true"}})
	}
	o = call(t, c, tools.RunCommand, map[string]any{"argv": []any{"true"}})
	if o.Decision != "refused: rate per_minute" {
		t.Errorf("the sixth call: %+v", o)
	}
	lines := logLines(t, logPath)
	if len(lines) != 8 {
		t.Fatalf("%d audit lines, want 8", len(lines))
	}
	if l := lines[0]; l["tool"] != "run_command" || l["decision"] != "admitted" || l["arguments"].(map[string]any)["argv"] != `["printf","[%s]\n","a b","$HOME; echo *","'x'"]` {
		t.Errorf("the first line: %v", l)
	}
	if l := lines[2]; l["decision"] != "refused: timeout" || l["status"] != "refused" {
		t.Errorf("the refused line: %v", l)
	}
}

// TestRunCommandUnlimitedTimeout: with no timeout in the file, a call may
// set any.
func TestRunCommandUnlimitedTimeout(t *testing.T) {
	c, _ := setup(t)
	f, err := tools.Parse("tools.toml", []byte("[run_command]\nprofile = \"default\"\nlimits.timeout = \"0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.File = f
	o := call(t, c, tools.RunCommand, map[string]any{"argv": []any{"true"}, "timeout": "1h"})
	if o.Failed() || o.Report.Limits.TimeoutMs != 3600000 {
		t.Errorf("%+v", o)
	}
}

// TestNoRunCommandByDefault: a file without [run_command] has no such
// tool, and a call of it is refused as unknown.
func TestNoRunCommandByDefault(t *testing.T) {
	c, _ := setup(t)
	o := call(t, c, tools.RunCommand, map[string]any{"argv": []any{"id"}})
	if o.Decision != "refused: unknown tool" || o.Report != nil {
		t.Errorf("%+v", o)
	}
}

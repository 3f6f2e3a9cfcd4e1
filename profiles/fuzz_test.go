package profiles

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the loader as a profile file. It must
// never panic; whatever it accepts must survive Marshal and Load unchanged
// and turn into a Spec without panicking.
func FuzzLoad(f *testing.F) {
	for _, info := range List() {
		data, err := shipped.ReadFile(info.Name + ".toml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"extends = \"default\"\n",
		"extends = \"default\"\n[limits]\nmemory = 1073741824\ncpus = 0.5\npids = \"unlimited\"\n",
		"extends = \"default\"\n[limits]\nmemroy = \"1G\"\n",
		"extends = \"strict\"\n[filesystem]\nro = [\"a:/b\"]\ntmpfs = [\"/x:1K\"]\n[env]\nset = { A = \"b\" }\n",
		"extends = \"self.toml\"\n",
		"extends = \"default\"\n[landlock]\nbind_tcp = [1, 65535]\n",
		"extends = \"default\"\n[env.set]\n\"=\" = \"\"\n",
		"extends = \"default\"\n[limits]\ncpus = nan\nmemory = inf\n",
		"[[filesystem]]\n",
		"extends = [\"default\"]\n",
		"extends = \"default\"\nlimits = { memory = \"1G\" }\n",
		"extends = \"default\"\nhost_user = \"1000:1000\"\n",
		"extends = \"default\"\nhost_user = 70000\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "self.toml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		defer p.Close()
		out, err := p.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a loaded profile: %v", err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("Load(Marshal(p)): %v\n%s", err, out)
		}
		back.Close()
		back.files = p.files
		if !reflect.DeepEqual(back, p) {
			t.Fatalf("round trip changed the profile:\n%+v\n%+v\n%s", p, back, out)
		}
		// No workdir: Spec must not depend on where the fuzzer runs.
		no := false
		p.Filesystem.Workdir = &no
		_, _ = p.Spec(Request{Args: []string{"true"}, Cwd: dir})
	})
}

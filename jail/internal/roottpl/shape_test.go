package roottpl

import (
	"reflect"
	"testing"
)

func bind(dest string) Mount  { return Mount{Kind: Bind, Dest: dest, Source: dest, Fixed: true} }
func other(dest string) Mount { return Mount{Kind: Bind, Dest: dest, Source: "/src" + dest, Dir: true} }
func tmpfs(dest string) Mount { return Mount{Kind: Tmpfs, Dest: dest} }
func mask(dest string) Mount  { return Mount{Kind: Mask, Dest: dest} }

func TestInTemplate(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   []Mount
		want []bool
	}{
		{"fixed binds", []Mount{bind("/usr"), bind("/etc/ssl/certs")}, []bool{true, true}},
		{"a run's own bind is not", []Mount{other("/work")}, []bool{false}},
		{"a tmpfs is not", []Mount{tmpfs("/tmp")}, []bool{false}},
		{"a fixed bind below an earlier run's mount", []Mount{tmpfs("/opt"), bind("/opt/tool")}, []bool{false, false}},
		{"a fixed bind above an earlier run's mount", []Mount{tmpfs("/a/b"), bind("/a")}, []bool{false, false}},
		{"a fixed bind beside a run's mount", []Mount{tmpfs("/tmp"), bind("/usr")}, []bool{false, true}},
		{"a run's mount below a fixed bind", []Mount{bind("/usr"), other("/usr/src/p")}, []bool{true, false}},
		{"a run's mount on a fixed bind's destination", []Mount{bind("/data"), other("/data")}, []bool{false, false}},
		{"a mask on a fixed bind's destination", []Mount{bind("/etc/x"), mask("/etc/x")}, []bool{false, false}},
		{"a mask below a fixed bind", []Mount{bind("/home/u"), mask("/home/u/.ssh")}, []bool{true, false}},
		{"below a fixed bind left out", []Mount{bind("/data"), other("/data"), bind("/data/x")}, []bool{false, false, false}},
		{"below /proc", []Mount{bind("/proc/x")}, []bool{false}},
		{"below /dev", []Mount{bind("/dev/kvm")}, []bool{false}},
		{"the root", []Mount{bind("/")}, []bool{false}},
		{"a writable bind", []Mount{{Kind: Bind, Dest: "/w", Source: "/w"}}, []bool{false}},
	} {
		if got := InTemplate(tc.ms); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMountPoints(t *testing.T) {
	early := []Point{{"/proc", true}, {"/dev", true}}
	for _, tc := range []struct {
		name string
		ms   []Mount
		want []Point // after Early's
		ok   bool
	}{
		{"tmpfs and workdir on the root", []Mount{bind("/usr"), tmpfs("/tmp"), other("/work/p")}, []Point{{"/tmp", true}, {"/work/p", true}}, true},
		{"a file bind", []Mount{{Kind: Bind, Dest: "/etc/resolv.conf", Source: "/x"}}, []Point{{"/etc/resolv.conf", false}}, true},
		{"in a run's tmpfs: made by the init", []Mount{tmpfs("/tmp"), other("/tmp/work")}, []Point{{"/tmp", true}}, true},
		{"in a fixed bind: the host's", []Mount{bind("/usr"), other("/usr/src/p")}, nil, true},
		{"on a bind left out of the template", []Mount{bind("/data"), other("/data")}, []Point{{"/data", false}}, true},
		{"masks are not made", []Mount{bind("/home/u"), mask("/home/u/.ssh"), mask("/x")}, nil, true},
		{"below /dev", []Mount{tmpfs("/dev/shm")}, nil, true},
		{"a symlink of a run's own", []Mount{{Kind: Bind, Dest: "/l", Source: "/l", Symlink: true}}, nil, false},
	} {
		got, ok := MountPoints(tc.ms, InTemplate(tc.ms))
		want := append(append([]Point(nil), early...), tc.want...)
		if ok != tc.ok || ok && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, want, tc.ok)
		}
	}
}

// Shapes that differ in anything a template holds have different keys.
func TestKey(t *testing.T) {
	base := func() *Shape {
		ms := []Mount{bind("/usr"), tmpfs("/tmp"), other("/work")}
		in := InTemplate(ms)
		pts, _ := MountPoints(ms, in)
		return &Shape{Mounts: ms, In: in, Points: pts, Etc: []File{{"hostname", "a\n"}}, UID: 1, GID: 2}
	}
	seen := map[string]string{base().Key(): "base"}
	for _, tc := range []struct {
		name string
		edit func(s *Shape)
	}{
		{"uid", func(s *Shape) { s.UID = 3 }},
		{"gid", func(s *Shape) { s.GID = 3 }},
		{"an /etc file's content", func(s *Shape) { s.Etc[0].Data = "b\n" }},
		{"an /etc file's name", func(s *Shape) { s.Etc[0].Name = "hosts" }},
		{"a bind's source", func(s *Shape) { s.Mounts[0].Source = "/opt" }},
		{"a bind's destination", func(s *Shape) { s.Mounts[0].Dest = "/opt" }},
		{"a bind kept as a symlink", func(s *Shape) { s.Mounts[0].KeepSymlink = true }},
		{"an optional bind", func(s *Shape) { s.Mounts[0].Optional = true }},
		{"a mount point", func(s *Shape) { s.Points[3].Path = "/work2" }},
		{"a mount point's kind", func(s *Shape) { s.Points[3].Dir = false }},
		{"a mount of the run's own before the template's", func(s *Shape) {
			s.Mounts = append([]Mount{mask("/x")}, s.Mounts...)
			s.In = append([]bool{false}, s.In...)
		}},
	} {
		s := base()
		tc.edit(s)
		k := s.Key()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s: same key as %s", tc.name, prev)
		}
		seen[k] = tc.name
	}
	if base().Key() != base().Key() {
		t.Error("one shape, two keys")
	}
}

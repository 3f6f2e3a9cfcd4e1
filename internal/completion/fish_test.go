package completion

import "testing"

func TestFishFlag(t *testing.T) {
	const cond = "complete -c tj -n C"
	for _, tc := range []struct {
		f    Flag
		want string
	}{
		{Flag{Name: "quiet", Aliases: []string{"q"}, Help: "no summary; ever"},
			cond + " -l quiet -s q -d 'no summary'\n"},
		{Flag{Name: "v", Help: "verbose"},
			cond + " -s v -d 'verbose'\n"},
		{Flag{Name: "profile", TakesValue: true, Value: Value{Files: true, Words: []string{"default"}}, Help: "profile"},
			cond + " -l profile -r -F -a 'default'\n" + cond + " -l profile -r -F -d 'profile'\n"},
		{Flag{Name: "workdir", TakesValue: true, Value: Value{Dirs: true}, Help: "dir"},
			cond + " -l workdir -x -a '(__fish_complete_directories (commandline -ct))' -d 'dir'\n"},
		{Flag{Name: "net", TakesValue: true, Value: Value{Words: []string{"none", "host"}}, Help: "mode"},
			cond + " -l net -x -a 'none host'\n" + cond + " -l net -x -d 'mode'\n"},
	} {
		if got := fishFlag(cond, tc.f); got != tc.want {
			t.Errorf("fishFlag(%+v) =\n%s\nwant\n%s", tc.f, got, tc.want)
		}
	}
}

func TestFishArgs(t *testing.T) {
	const cond = "C"
	for _, tc := range []struct {
		args Value
		want string
	}{
		{Value{Files: true}, ""}, // fish's default
		{Value{Files: true, Words: []string{"a"}}, "C -a 'a'\n"},
		{Value{Dirs: true}, "C -f -a '(__fish_complete_directories (commandline -ct))'\n"},
		{Value{}, "C -f\n"},
		{Value{Words: []string{"x", "y"}}, "C -f\nC -a 'x y'\n"},
	} {
		if got := fishArgs(cond, tc.args); got != tc.want {
			t.Errorf("fishArgs(%+v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

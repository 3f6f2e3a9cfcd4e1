package landlock

import (
	"slices"
	"testing"
)

// TestAccessRights checks which rights each Access grants on directories,
// files and device nodes, and which accesses cannot apply.
func TestAccessRights(t *testing.T) {
	type tc struct {
		a        Access
		dir, dev bool
		want     []string
	}
	for _, c := range []tc{
		{ReadExec, true, false, []string{"execute", "read_file", "read_dir"}},
		{ReadExec, false, false, []string{"execute", "read_file"}},
		{Read, true, false, []string{"read_file", "read_dir"}},
		{Read, false, false, []string{"read_file"}},
		// A Read rule on a device node: no write, no ioctl.
		{Read, false, true, []string{"read_file"}},
		// No ioctl_dev from ReadWrite on a directory holding device nodes.
		{ReadWrite, true, false, []string{"execute", "write_file", "read_file", "read_dir", "remove_dir", "remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym", "refer", "truncate", "resolve_unix"}},
		{ReadWrite, false, false, []string{"execute", "write_file", "read_file", "truncate"}},
		{ReadWrite, false, true, []string{"write_file", "read_file", "truncate", "ioctl_dev"}},
		{Device, false, true, []string{"write_file", "read_file", "truncate", "ioctl_dev"}},
		{Device, true, false, []string{"write_file", "read_file", "truncate", "ioctl_dev"}},
		{List, true, false, []string{"read_dir"}},
	} {
		set, err := c.a.rights(c.dir, c.dev)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(uint64(set), fsRightNames); !slices.Equal(got, c.want) {
			t.Errorf("%s dir=%v dev=%v: %v, want %v", c.a, c.dir, c.dev, got, c.want)
		}
		if !c.dir && set&^fileRights != 0 {
			t.Errorf("%s on a file has directory rights %v", c.a, set&^fileRights)
		}
	}
	for _, c := range []struct {
		a        Access
		dir, dev bool
	}{{List, false, false}, {List, false, true}, {"rwx", true, false}, {"", false, false}} {
		if _, err := c.a.rights(c.dir, c.dev); err == nil {
			t.Errorf("%q dir=%v dev=%v: no error", c.a, c.dir, c.dev)
		}
	}
}

package seccomp

import (
	"github.com/tooljail/tooljail/internal/editdist"

	"sort"
	"strings"
	"sync"
)

// The syscall table is split into named groups. Every syscall the kernel
// has (as of Linux 6.18, x86_64 and arm64 names) is in exactly one group, so
// that a new syscall is a deliberate decision and not an accident of the
// list; groupsTest checks that against libseccomp's table.
//
// Groups in defaultAllow make up the default allowlist, in the spirit of
// Docker's default profile. The others are denied unless a policy allows
// them.

// defaultAllow lists the groups that the default policy allows.
var defaultAllow = []string{
	"@aio", "@basic-io", "@credentials", "@file-system", "@io-event", "@ipc",
	"@memory", "@network", "@process", "@sandbox", "@signal", "@system-info", "@timer",
}

// groups is built on first use, not in init: filling it was most of this
// package's init, which every tooljail command runs. Its table is written
// in three parts, each a function of its own.
var groups = sync.OnceValue(func() map[string][]string {
	all := map[string][]string{}
	for _, part := range []func() map[string][]string{fileGroups, processGroups, deniedGroups} {
		for g, names := range part() {
			all[g] = names
		}
	}
	return all
})

// fileGroups are groups allowed by default: I/O, files, credentials, IPC.
func fileGroups() map[string][]string {
	return map[string][]string{
		"@aio": {"io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_setup", "io_submit"},
		"@basic-io": {
			"close", "close_range", "copy_file_range", "dup", "dup2", "dup3", "ioctl", "lseek",
			"pread64", "preadv", "preadv2", "pwrite64", "pwritev", "pwritev2", "read", "readv",
			"recvmsg", "sendfile", "sendmsg", "splice", "tee", "vmsplice", "write", "writev",
		},
		"@credentials": {
			"capget", "capset", "getegid", "geteuid", "getgid", "getgroups", "getresgid",
			"getresuid", "getuid", "setfsgid", "setfsuid", "setgid", "setgroups", "setregid",
			"setresgid", "setresuid", "setreuid", "setuid",
		},
		"@file-system": {
			"access", "cachestat", "chdir", "chmod", "chown", "creat", "faccessat", "faccessat2",
			"fadvise64", "fallocate", "fchdir", "fchmod", "fchmodat", "fchmodat2", "fchown",
			"fchownat", "fcntl", "fdatasync", "fgetxattr", "file_getattr", "file_setattr",
			"flistxattr", "flock", "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync",
			"ftruncate", "futimesat", "getcwd", "getdents", "getdents64", "getxattr", "getxattrat",
			"inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "lchown",
			"lgetxattr", "link", "linkat", "listxattr", "listxattrat", "llistxattr", "lremovexattr",
			"lsetxattr", "lstat", "memfd_create", "mkdir", "mkdirat", "mknod", "mknodat",
			"newfstatat", "open", "openat", "openat2", "readahead", "readlink", "readlinkat",
			"removexattr", "removexattrat", "rename", "renameat", "renameat2", "rmdir", "setxattr",
			"setxattrat", "stat", "statfs", "statx", "symlink", "symlinkat", "sync",
			"sync_file_range", "syncfs", "truncate", "umask", "unlink", "unlinkat", "utime",
			"utimensat", "utimes",
		},
		"@io-event": {
			"epoll_create", "epoll_create1", "epoll_ctl", "epoll_pwait", "epoll_pwait2",
			"epoll_wait", "eventfd", "eventfd2", "poll", "ppoll", "pselect6", "select",
		},
		"@ipc": {
			"mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive", "mq_timedsend", "mq_unlink",
			"msgctl", "msgget", "msgrcv", "msgsnd", "pipe", "pipe2", "semctl", "semget", "semop",
			"semtimedop", "shmat", "shmctl", "shmdt", "shmget",
		},
	}
}

// processGroups are groups allowed by default: memory, network, processes,
// signals, time.
func processGroups() map[string][]string {
	return map[string][]string{
		"@memory": {
			"brk", "get_mempolicy", "madvise", "map_shadow_stack", "mbind", "mincore", "mlock", "mlock2",
			"mlockall", "mmap", "mprotect", "mremap", "mseal", "msync", "munlock", "munlockall",
			"munmap", "pkey_alloc", "pkey_free", "pkey_mprotect", "remap_file_pages",
			"set_mempolicy", "set_mempolicy_home_node",
		},
		"@network": {
			"accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt",
			"listen", "recvfrom", "recvmmsg", "sendmmsg", "sendto", "setsockopt", "shutdown",
			"socket", "socketpair",
		},
		"@process": {
			"arch_prctl", "clone", "execve", "execveat", "exit", "exit_group", "fork", "futex",
			"futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "get_robust_list",
			"get_thread_area", "getpgid", "getpgrp", "getpid", "getppid", "getpriority", "getsid",
			"gettid", "ioprio_get", "ioprio_set", "kill", "membarrier", "personality",
			"pidfd_open", "pidfd_send_signal", "prctl", "process_mrelease", "restart_syscall",
			"rseq", "sched_get_priority_max", "sched_get_priority_min", "sched_getaffinity",
			"sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
			"sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler",
			"sched_yield", "set_robust_list", "set_thread_area", "set_tid_address", "setpgid",
			"setpriority", "setsid", "tgkill", "tkill", "unshare", "vfork", "wait4", "waitid",
		},
		// Only ever tighten the caller's own sandbox.
		"@sandbox": {
			"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self",
			"lsm_get_self_attr", "lsm_list_modules", "seccomp",
		},
		"@signal": {
			"alarm", "pause", "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo",
			"rt_sigreturn", "rt_sigsuspend", "rt_sigtimedwait", "rt_tgsigqueueinfo", "sigaltstack",
			"signalfd", "signalfd4",
		},
		"@system-info": {"getcpu", "getrandom", "getrlimit", "getrusage", "prlimit64", "setrlimit", "sysinfo", "times", "uname"},
		"@timer": {
			"clock_getres", "clock_gettime", "clock_nanosleep", "getitimer", "gettimeofday",
			"nanosleep", "setitimer", "time", "timer_create", "timer_delete", "timer_getoverrun",
			"timer_gettime", "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime",
		},
	}
}

// deniedGroups are the groups denied by default.
func deniedGroups() map[string][]string {
	return map[string][]string{
		"@bpf":   {"bpf"},
		"@clock": {"adjtimex", "clock_adjtime", "clock_settime", "settimeofday", "stime"},
		// clone3 passes its flags in memory, where a filter cannot read them;
		// unshare and clone are allowed by default without CLONE_NEW* flags.
		"@namespaces": {"clone3", "setns"},
		"@io_uring":   {"io_uring_enter", "io_uring_register", "io_uring_setup"},
		"@kexec":      {"kexec_file_load", "kexec_load"},
		"@keyring":    {"add_key", "keyctl", "request_key"},
		"@modules":    {"create_module", "delete_module", "finit_module", "init_module", "query_module", "get_kernel_syms"},
		"@mount": {
			"chroot", "fsconfig", "fsmount", "fsopen", "fspick", "listmount", "mount",
			"mount_setattr", "move_mount", "open_tree", "open_tree_attr", "pivot_root", "statmount",
			"umount", "umount2",
		},
		"@obsolete": {
			"_sysctl", "afs_syscall", "epoll_ctl_old", "epoll_wait_old", "getpmsg", "lookup_dcookie",
			"nfsservctl", "putpmsg", "security", "tuxcall", "uselib", "ustat", "vserver", "sysfs",
		},
		"@perf": {"perf_event_open"},
		// Calls that act on another process's memory or file table.
		"@ptrace": {"kcmp", "migrate_pages", "move_pages", "pidfd_getfd", "process_madvise", "process_vm_readv", "process_vm_writev", "ptrace"},
		"@privileged": {
			"acct", "fanotify_init", "fanotify_mark", "ioperm", "iopl", "lsm_set_self_attr",
			"memfd_secret", "modify_ldt", "name_to_handle_at", "open_by_handle_at", "quotactl",
			"quotactl_fd", "setdomainname", "sethostname", "syslog", "uretprobe", "userfaultfd",
			"vhangup",
		},
		"@reboot": {"reboot"},
		"@swap":   {"swapoff", "swapon"},
	}
}

// required are the calls the jail's stage 2 (C, no Go runtime: see
// jail/internal/initc/stage2.c) makes between loading the filter and execve: hand over
// the listener, wait for the supervisor, mark descriptors close-on-exec,
// unblock signals, report a failed execve. A policy cannot deny them.
var required = []string{
	"close", "close_range", "execve", "exit_group", "recvmsg", "rt_sigprocmask", "sendmsg", "write",
}

// syscallGroup maps every syscall name in the table to its group. Built on
// first use: every process of a run starts this binary, and most never
// resolve a policy.
var syscallGroup = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	for g, names := range groups() {
		for _, n := range names {
			if prev, dup := m[n]; dup {
				panic("seccomp: " + n + " is in " + prev + " and " + g)
			}
			m[n] = g
		}
	}
	return m
})

// Groups returns the syscall groups a policy can name, each sorted, plus
// "@default", the groups the default policy allows. The result is a copy.
func Groups() map[string][]string {
	out := make(map[string][]string, len(groups())+1)
	for g, names := range groups() {
		s := append([]string(nil), names...)
		sort.Strings(s)
		out[g] = s
	}
	out["@default"] = append([]string(nil), defaultAllow...)
	return out
}

// closeNames suggests up to three known names near an unknown one, for
// error messages: same prefix, or a small edit distance.
func closeNames(name string, known []string) []string {
	type cand struct {
		n string
		d int
	}
	var cs []cand
	for _, k := range known {
		d := editdist.Distance(name, k)
		if d <= 2 || (len(name) >= 4 && strings.HasPrefix(k, name)) {
			cs = append(cs, cand{k, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].n < cs[j].n
	})
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].n)
	}
	return out
}

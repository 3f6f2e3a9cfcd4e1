// The fork of the init (tj_init_start): a clone with every namespace at
// once, straight into the run's cgroup, that runs tj_init_main (init.c)
// and never returns to Go. In a static binary the fork leaves out the
// memory the init does without (tj_dontfork).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_internal.h"

#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif

// What the fork leaves out. A fork copies the page tables of every
// private writable mapping and makes its pages copy-on-write in both
// processes: the supervisor then copies each page it writes for as long as
// the init lives, and the init's exit unmaps them all again. The init
// needs none of the Go heap, the Go runtime's mappings, other threads'
// stacks or malloc's arenas. It keeps
// the plan's chunks, this thread's stack (its TLS too), the binary's data
// and bss, the brk heap, the process stack (argv, environ) and every file
// mapping: the supervisor marks the rest MADV_DONTFORK around the clone.
//
// Only in a static binary (the CLI): there the layout is known. In a
// dynamically linked program the loader keeps its link maps, the main
// thread's TLS and each library's bss in anonymous mappings that the init
// may touch (lazy binding on its first call of a libc function), so the
// init gets a copy of everything, as before. The restore after the clone
// assumes nothing else in the process marks mappings MADV_DONTFORK (the Go
// runtime and glibc do not); a static program that does would find such a
// mark undone on an anonymous mapping.
struct tj_span {
	uintptr_t lo, hi;
};
#define TJ_MAX_SPANS 256

extern char etext[], _end[];

static const char *tj_hex(const char *s, uintptr_t *v) {
	*v = 0;
	for (;; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10 : -1;
		if (d < 0) {
			return s;
		}
		*v = *v << 4 | (uintptr_t)d;
	}
}

static int tj_overlap(uintptr_t lo, uintptr_t hi, uintptr_t klo, uintptr_t khi) {
	return lo < khi && klo < hi;
}

// tj_leave_out reads one /proc/self/maps line: whether [lo, hi) is memory
// the init does without.
static int tj_leave_out(const struct tj_init *p, char *line, uintptr_t sp, struct tj_span *out) {
	uintptr_t lo, hi, inode = 0;
	const char *s = tj_hex(line, &lo);
	if (*s != '-') {
		return 0;
	}
	s = tj_hex(s + 1, &hi);
	if (*s != ' ' || strncmp(s + 1, "rw-p ", 5) != 0) {
		return 0; // read-only, shared or inaccessible: nothing to copy
	}
	s += 6;
	for (int field = 0; field < 2; field++) { // offset, device
		s = strchr(s, ' ');
		if (s == NULL) {
			return 0;
		}
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++) {
		inode = inode * 10 + (uintptr_t)(*s - '0');
	}
	while (*s == ' ') {
		s++;
	}
	if (inode != 0 || (*s != 0 && strncmp(s, "[anon:", 6) != 0)) {
		return 0; // a file, [heap], [stack], [vdso]...
	}
	if (tj_overlap(lo, hi, sp, sp + 1) || tj_overlap(lo, hi, (uintptr_t)etext, (uintptr_t)_end)) {
		return 0;
	}
	for (int i = 0; i < p->nkeep; i++) {
		if (tj_overlap(lo, hi, p->keep_lo[i], p->keep_hi[i])) {
			return 0;
		}
	}
	out->lo = lo;
	out->hi = hi;
	return 1;
}

// tj_dontfork marks what the init does without and returns the spans
// to restore after the clone; on any trouble it marks less, and the init
// gets a copy of more.
static int tj_dontfork(const struct tj_init *p, struct tj_span *spans) {
	if (p->nkeep <= 0 || getauxval(AT_BASE) != 0) {
		return 0;
	}
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		return 0;
	}
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	char buf[8192];
	size_t have = 0;
	int n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof buf - 1 - have);
		if (r <= 0) {
			break;
		}
		have += (size_t)r;
		char *line = buf, *nl;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line))) != NULL) {
			*nl = 0;
			if (n < TJ_MAX_SPANS && tj_leave_out(p, line, sp, &spans[n])) {
				n++;
			}
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof buf - 1) {
			break; // no line is this long
		}
	}
	close(fd);
	// Marked after reading: the marks can merge mappings, which would
	// shift what the read sees. Every span is returned for the restore,
	// whatever its mark returned: another thread may have unmapped part of
	// it since the read, and then madvise marks the part still mapped and
	// returns ENOMEM. A mark left behind would leave that memory out of a
	// later init (a new thread's stack, another run's plan) and the init
	// would fault.
	for (int i = 0; i < n; i++) {
		madvise((void *)spans[i].lo, spans[i].hi - spans[i].lo, MADV_DONTFORK);
	}
	return n;
}

struct tj_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

// One fork at a time: another run's marks would leave out this run's plan
// and stack.
static pthread_mutex_t tj_fork_lock = PTHREAD_MUTEX_INITIALIZER;

long tj_init_start(const struct tj_init *p, int *pidfd) {
	uint64_t all = ~(uint64_t)0, old;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
	struct tj_span spans[TJ_MAX_SPANS];
	pthread_mutex_lock(&tj_fork_lock);
	int nspans = tj_dontfork(p, spans);
	long pid;
	if (p->cgroup_fd >= 0) {
		struct tj_clone_args a;
		memset(&a, 0, sizeof a);
		a.flags = p->clone_flags | CLONE_INTO_CGROUP | CLONE_PIDFD;
		a.pidfd = (uint64_t)(uintptr_t)pidfd;
		a.exit_signal = SIGCHLD;
		a.cgroup = (uint64_t)p->cgroup_fd;
		pid = syscall(SYS_clone3, &a, sizeof a);
	} else {
		// The pidfd goes where the parent's tid would (Linux 5.2+).
		pid = syscall(SYS_clone, p->clone_flags | CLONE_PIDFD | SIGCHLD, NULL, pidfd, NULL, 0);
	}
	if (pid == 0) {
		if (p->nons) {
			tj_nons_main(p);
		}
		tj_init_main(p);
	}
	int e = errno;
	// Restored span by span, whatever madvise returns: a span partly
	// unmapped since the mark still has its mapped part restored.
	for (int i = 0; i < nspans; i++) {
		madvise((void *)spans[i].lo, spans[i].hi - spans[i].lo, MADV_DOFORK);
	}
	pthread_mutex_unlock(&tj_fork_lock);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	return pid < 0 ? -e : pid;
}

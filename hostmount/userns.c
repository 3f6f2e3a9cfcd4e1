#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userns.h"

#define HM_STACK_SIZE (64 * 1024)

// The child only exists: it sleeps until it is killed. ppoll with no
// descriptors and no timeout (SYS_pause does not exist on every
// architecture); every signal is blocked, so nothing else wakes it.
static int hm_sleeper(void *arg) {
	(void)arg;
	for (;;)
		syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
	return 0;
}

static int hm_write_map(int pid, const char *file, unsigned from, unsigned to) {
	char path[64], line[64];
	snprintf(path, sizeof path, "/proc/%d/%s", pid, file);
	int n = snprintf(line, sizeof line, "%u %u 1\n", from, to);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		return -errno;
	}
	int r = write(fd, line, n) == n ? 0 : -(errno ? errno : EIO);
	close(fd);
	return r;
}

// hm_userns makes a user namespace whose uid_map and gid_map are
// "from to 1" and returns an O_RDONLY descriptor of it, or -errno; *step
// says which step failed (1 clone, 2 uid_map, 3 gid_map, 4 open).
//
// The namespace needs a process to be made and its maps written: a child
// cloned with CLONE_VM on a small stack of its own, so that no page table
// of the (Go) caller is copied, with every signal blocked. It runs only
// hm_sleeper and is killed and reaped before this returns.
int hm_userns(unsigned uid_from, unsigned uid_to, unsigned gid_from, unsigned gid_to, int *step) {
	*step = 1;
	void *stack = mmap(NULL, HM_STACK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED) {
		return -errno;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int pid = clone(hm_sleeper, (char *)stack + HM_STACK_SIZE, CLONE_VM | CLONE_NEWUSER | SIGCHLD, NULL);
	int err = pid < 0 ? -errno : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(stack, HM_STACK_SIZE);
		return err;
	}
	int fd = -1;
	*step = 2;
	err = hm_write_map(pid, "uid_map", uid_from, uid_to);
	if (err == 0) {
		*step = 3;
		err = hm_write_map(pid, "gid_map", gid_from, gid_to);
	}
	if (err == 0) {
		*step = 4;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		err = fd < 0 ? -errno : 0;
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR) {
	}
	munmap(stack, HM_STACK_SIZE);
	return err < 0 ? err : fd;
}

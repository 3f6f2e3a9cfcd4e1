// Stage 2 in C: the child the init forks to become the command. See
// stage2.c for why it is C and stage2.go for the Go side.
#ifndef TOOLJAIL_STAGE2_H
#define TOOLJAIL_STAGE2_H

#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>

struct tj_rlimit {
	int resource;
	uint64_t cur, max;
};

#define TJ_MAX_RLIMITS 8

// tj_stage2 is everything the child needs, prepared by the init in Go:
// the child only makes system calls with it.
struct tj_stage2 {
	unsigned long clone_flags;
	int sync_fd;    // the child reads one byte: the init has written its id maps
	int status_fd;  // the child writes a tj_status when it fails (close-on-exec)
	int parent_pid; // the init's pid, for the parent-death race check
	const char *dir;
	int nrlimits;
	struct tj_rlimit rlimits[TJ_MAX_RLIMITS];
	int thp_disable;
	int landlock_fd; // -1: no Landlock
	unsigned int landlock_flags;
	struct sock_filter *filter; // NULL: no seccomp
	unsigned short filter_len;
	unsigned int seccomp_flags;
	int notify; // the filter returns a listener, sent with the ready message
	int sock;   // the supervisor's socket
	const void *ready;
	size_t ready_len;
	int wait_ack;
	char *const *argv;
	char *const *envp;
	char *const *paths; // where to look for argv[0], in order
	int npaths;
};

// What failed in the child: written to status_fd before it exits with code.
struct tj_status {
	int32_t step;
	int32_t err;   // errno
	int32_t index; // the rlimit, capability or path index the step was at
	int32_t code;  // the child's exit code
};

enum {
	TJ_STEP_SYNC = 1,
	TJ_STEP_SETSID,
	TJ_STEP_PDEATHSIG,
	TJ_STEP_CAPBSET,
	TJ_STEP_NNP,
	TJ_STEP_AMBIENT,
	TJ_STEP_CAPSET,
	TJ_STEP_CHDIR,
	TJ_STEP_RLIMIT,
	TJ_STEP_THP,
	TJ_STEP_LANDLOCK,
	TJ_STEP_SECCOMP,
	TJ_STEP_READY,
	TJ_STEP_ACK,
	TJ_STEP_FDS,
	TJ_STEP_EXEC,
};

// tj_stage2_start forks the child (it never returns there) and returns its
// pid, or -errno.
long tj_stage2_start(const struct tj_stage2 *s);

// The RLIMIT_NOFILE this process started with, before the Go runtime
// raised its soft limit; tj_orig_nofile_ok is 0 if it could not be read.
extern uint64_t tj_orig_nofile_cur, tj_orig_nofile_max;
extern int tj_orig_nofile_ok;

#endif

// Stage 2 in C: the child the init forks to become the command. See
// stage2.c for why it is C and stage2.go for the Go side that prepares it.
#ifndef TOOLJAIL_STAGE2_H
#define TOOLJAIL_STAGE2_H

#include <stddef.h>
#include <stdint.h>
#include <linux/filter.h>

#include "init_steps.h"

struct tj_rlimit {
	int resource;
	uint64_t cur, max;
};

#define TJ_MAX_RLIMITS 8

// The kernel's struct sigaction, for raw rt_sigaction (the init's and
// stage 2's): glibc's wrapper refuses the signals it keeps for itself (32,
// 33), which a caller may have ignored too.
struct tj_ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

// tj_stage2 is everything the child needs, prepared by the supervisor in Go
// (the descriptors and the Landlock ruleset are filled in by the init): the
// child only makes system calls with it.
struct tj_stage2 {
	unsigned long clone_flags;
	int sync_fd;    // the child reads one byte: the init has written its id maps
	int status_fd;  // the child writes a failure record there (close-on-exec)
	int parent_pid; // the init's pid, for the parent-death race check
	const char *dir;
	int nrlimits;
	struct tj_rlimit rlimits[TJ_MAX_RLIMITS];
	int thp_disable;
	unsigned long timer_slack; // 0: leave it as inherited
	uint64_t sigign; // signals the command starts ignoring (bit N-1: signal N)
	int landlock_fd; // -1: no Landlock
	unsigned int landlock_flags;
	struct sock_filter *filter; // NULL: no seccomp
	unsigned short filter_len;
	unsigned int seccomp_flags;
	int notify; // the filter returns a listener, sent with the ready record
	int sock;   // the supervisor's socket: records go there
	int wait_ack;
	// warm: stage 2 parks after its ready record until the supervisor
	// sends the command (argv, envp, paths and stdio: stage2.c's
	// tj_wait_for_call), and fills in the four fields below itself.
	int warm;
	char *const *argv;
	char *const *envp;
	char *const *paths; // where to look for argv[0], in order
	int npaths;
	// ahead: a session's next call, started before it comes (init_session.c):
	// stage 2 parks, confined, before its ready record, until the init
	// sends the call's stdin, stdout and stderr on ahead_fd; the init has
	// put the call's strings and terminal in this memory by then.
	int ahead;
	int ahead_fd;
	// tty: the command gets a terminal of the jail's own devpts instead of
	// the descriptors it inherits (stage2.c's tj_open_tty), of this size.
	int tty;
	uint16_t tty_rows, tty_cols;
	// Without namespaces (nonsreap.c): stage 2 has no capabilities of a user
	// namespace of its own, so it drops the bounding set only as root
	// (setid), before it becomes uid:gid without supplementary groups.
	int nons;
	int setid;
	uint32_t uid, gid;
};

// The limits of a warm call's message (warm.go checks them first).
#define TJ_CALL_MAX_BYTES (128 << 10)
#define TJ_CALL_MAX_STRINGS 8192
#define TJ_CALL_MAGIC 0x746a6332u // "tjc2"

// tj_call_header starts a call's message (a warm jail's, or a session's
// to its init); the strings follow, each NUL-terminated: argc arguments,
// envc variables, npaths candidates, and ndir (0 or 1) working
// directories (none: the plan's). flags: TJ_CALL_TTY asks for a terminal
// of tty_rows by tty_cols (tj_stage2's tty); TJ_CALL_KEEP keeps what a
// session's call leaves running.
struct tj_call_header {
	uint32_t magic;
	uint32_t argc, envc, npaths, ndir;
	uint32_t flags;
	uint16_t tty_rows, tty_cols;
};

#define TJ_CALL_TTY 1u
#define TJ_CALL_KEEP 2u

// A session's other message to its init: kill the running call (its PID
// namespace, or the process group of one that keeps its processes).
#define TJ_KILL_MAGIC 0x746a6b31u // "tjk1"

// The buffer a call's message is received into, and its parse: the
// strings and the terminal into w, the flags into *flags; 0, or -1 when
// the message is malformed.
extern char tj_call_buf[TJ_CALL_MAX_BYTES];
int tj_call_parse(struct tj_stage2 *w, long n, int msg_flags, uint32_t *flags);

// A record is what the init and stage 2 send the supervisor, one per
// packet: a failure (the supervisor turns it into the error text with
// init_steps.h), stage 2's ready (with the seccomp listener as
// SCM_RIGHTS) or the command's end. Only the used part of path is sent.
enum {
	TJ_REC_INIT_FAIL = 1, // the init failed at step (TJ_I_*) before the command ran
	TJ_REC_STAGE2_FAIL,   // stage 2 failed at step (TJ_STEP_*)
	TJ_REC_READY,         // stage 2 is about to execve
	TJ_REC_EXIT,          // the command ended
	TJ_REC_NET,           // the allow mode's listeners, as SCM_RIGHTS (init_net.c)
	TJ_REC_TTY,           // stage 2's terminal: its master, as SCM_RIGHTS
	TJ_REC_SESSION,       // a session's init is ready for calls (init_session.c)
	TJ_REC_EXECED,        // the command was exec'd: stage 2's status pipe closed at its execve
};

// At most this many sized tmpfs mounts of a jail are watched for filling
// up (init_reap.c); a plan with more watches the first ones.
#define TJ_MAX_WATCH 16

// What the tmpfs mount watch found: TJ_FULL_SPACE when a sample saw no
// free block, TJ_FULL_INODES when it saw no free inode.
enum {
	TJ_FULL_SPACE = 1,
	TJ_FULL_INODES = 2,
};

// tj_fill is one watched tmpfs mount at the command's end.
struct tj_fill {
	int32_t mount; // its index in the plan's mounts; -1: the jail's /dev/shm
	int32_t full;  // TJ_FULL_* flags seen by any sample
	int64_t size_bytes, peak_used_bytes;
};

struct tj_record {
	int32_t type;
	int32_t step;
	int32_t op;     // the system call or reason within step (TJ_OP_*), for the init
	int32_t err;    // errno
	int32_t index;  // the mount, rlimit, capability, rule or path the step was at
	int32_t code;   // the exit code a failure means (125, 126, 127)
	int32_t is_dir; // the command found at index is a directory; a mount destination must be one
	int32_t exit_code, signal;
	int64_t utime_us, stime_us, maxrss_kib;
	// The exit record's: processes still running when the command ended,
	// killed by the init (-1: not counted), and the watched tmpfs mounts.
	int32_t leftover;
	int32_t nfills;
	struct tj_fill fills[TJ_MAX_WATCH];
	char path[4096]; // the path the failure is about, NUL-terminated
};

// tj_stage2_start clones the child, which shares the caller's memory until
// its execve (it never returns there), and returns its pid, or -errno.
long tj_stage2_start(const struct tj_stage2 *s);

// tj_stage2_release unmaps the stack of stage 2 pid, which must run on it
// no more: it has exec'd (its status pipe closed without a failure
// record), or been reaped.
void tj_stage2_release(long pid);

// tj_send_record sends the first n bytes of r, with fd (unless -1) as
// SCM_RIGHTS; 0 or -errno.
long tj_send_record(int sock, const struct tj_record *r, size_t n, int fd);

// tj_stage2_execing is set by stage 2, in the memory it shares with the
// init, just before its execve: when its status pipe then closes without
// a failure record, the pipe was closed by a successful execve, not by
// stage 2's death before it. The init clears it as it reads it; a
// session's next stage 2 execs only after the init has.
extern volatile int tj_stage2_execing;

// tj_send_fds sends the n bytes of data with the nfds descriptors of fds
// (at most TJ_MAX_SEND_FDS) as SCM_RIGHTS, in one packet; 0 or -errno.
#define TJ_MAX_SEND_FDS 4
long tj_send_fds(int sock, const void *data, size_t n, const int *fds, int nfds);

// tj_record_size is the part of r to send: up to the end of its path.
size_t tj_record_size(const struct tj_record *r);

// The RLIMIT_NOFILE this process started with, before the Go runtime
// raised its soft limit; tj_orig_nofile_ok is 0 if it could not be read.
extern uint64_t tj_orig_nofile_cur, tj_orig_nofile_max;
extern int tj_orig_nofile_ok;

// The timer slack (ns) this process started with, before a constructor
// of the program's own may raise it (internal/timerslack does); stage 2 gives
// it back to the command. 0 if it could not be read.
extern unsigned long tj_orig_slack;
// The signals this process started with ignored (bit N-1: signal N),
// before the Go runtime put its handlers over most of them.
extern uint64_t tj_orig_sigign;

// Where the process's arguments are (the memory /proc/PID/cmdline reads).
extern char *tj_args_start;
extern size_t tj_args_len;

#endif

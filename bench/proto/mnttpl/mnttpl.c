/*
 * mnttpl.c - benchmark: fresh per-sandbox mount tree vs. mount-namespace template.
 *
 *   A  FRESH      driver clones init (NEWUSER|NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWCGROUP),
 *                 writes setgroups/uid_map/gid_map, init builds whole tree, pivot_root,
 *                 umount2(old, MNT_DETACH), fork+exec /bin/true, wait, exit.
 *   B  TEMPLATE   long-lived template (NEWUSER|NEWNS|NEWPID, tree built once, pivoted);
 *                 per request: open_tree(clone of workdir), clone(NEWNS|NEWPID|NEWNET|
 *                 NEWIPC|NEWUTS|NEWCGROUP); sandbox mounts /proc, tmpfs /tmp,
 *                 tmpfs /home/sandbox, move_mount(workdir -> /work), fork+exec /bin/true.
 *   C  TEMPLATE+NEWUSER  as B plus CLONE_NEWUSER; template writes the child's maps.
 *
 * Build: run.sh, which builds it with BASE a private directory of its own
 * (mktemp -d; the program mounts under BASE/newroot as root, so never a
 * fixed path in /tmp), runs every measurement and leaves the results in
 * BASE/out-TAG. Usage of the single modes: see usage() below.
 * A prototype for issue 32 (BENCHMARKS.md, "the mount-namespace template");
 * not part of tooljail and not built by make.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef OPEN_TREE_CLOEXEC
#define OPEN_TREE_CLOEXEC O_CLOEXEC
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

#ifndef BASE
#error "build with -DBASE='\"/a/private/dir\"' (run.sh makes one with mktemp -d)"
#endif
#define NEWROOT   BASE "/newroot"
#define WORKDIR   BASE "/workdir"

static int sys_open_tree(int dfd, const char *p, unsigned fl) { return syscall(SYS_open_tree, dfd, p, fl); }
static int sys_move_mount(int fd, const char *fp, int tfd, const char *tp, unsigned fl) { return syscall(SYS_move_mount, fd, fp, tfd, tp, fl); }
static int sys_pivot_root(const char *n, const char *o) { return syscall(SYS_pivot_root, n, o); }
static pid_t sys_clone(unsigned long flags) { return syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0); }

/* ---------- host paths (same list for every variant) ---------- */
static const char *etc_files[] = {   /* single files (or dir for ssl/certs), bound read-only */
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime", "/etc/hostname", "/etc/host.conf",
	"/etc/protocols", "/etc/services", "/etc/gai.conf", "/etc/ssl/openssl.cnf", "/etc/ssl/certs",
};
static const char *dev_nodes[] = { "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty" };
static const char *usr_links[][2] = { {"bin", "usr/bin"}, {"sbin", "usr/sbin"}, {"lib", "usr/lib"}, {"lib64", "usr/lib64"} };
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---------- timestamps ---------- */
enum { T_START, T_CLONE0, T_CLONE, T_MAPS, T_REQ, T_GO, T_TREE, T_PIVOT, T_MNT, T_FORK, T_REAP, T_INITREAPED, T_END, T_N };
static const char *tname[T_N] = { "start", "clone0", "clone", "maps", "req", "go", "tree", "pivot", "mnt", "fork", "reap", "initreaped", "end" };

struct rec {
	uint64_t ts[T_N];
	int64_t drv_self_ns, drv_child_us, tpl_self_ns, tpl_child_us;
};

struct shm {
	struct rec cur;
	volatile int hold_ready;
	int err_step, err_errno;
	char err_msg[256];
	char info[65536];
};
static struct shm *S;

static inline uint64_t now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static inline int64_t cpu_ns(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec * 1000000000ll + t.tv_nsec; }
static inline int64_t child_us(void) { struct rusage r; getrusage(RUSAGE_CHILDREN, &r);
	return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000ll + r.ru_utime.tv_usec + r.ru_stime.tv_usec; }
#define TS(i) (S->cur.ts[(i)] = now_ns())

static void die_child(int step, const char *fmt, ...)
{
	int e = errno;
	va_list ap; va_start(ap, fmt);
	vsnprintf(S->err_msg, sizeof S->err_msg, fmt, ap);
	va_end(ap);
	S->err_step = step; S->err_errno = e;
	_exit(100 + (step % 100));
}
#define CHK(x, step, ...) do { if ((x) < 0) die_child(step, __VA_ARGS__); } while (0)

static void xdie(const char *fmt, ...)
{
	va_list ap; va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
	fprintf(stderr, " (errno %d %s)\n", errno, strerror(errno));
	exit(1);
}

/* ---------- tree building ---------- */
static int extra_mounts = 0;  /* scaling experiment: extra ro binds in the (template/fresh) tree */

static void mkfile(const char *p, int dir)
{
	if (dir) { if (mkdir(p, 0755) < 0 && errno != EEXIST) die_child(10, "mkdir %s", p); }
	else { int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644); if (fd < 0) die_child(11, "creat %s", p); close(fd); }
}

static void bind_ro(const char *src, const char *dst, int ro)
{
	CHK(mount(src, dst, NULL, MS_BIND | MS_REC, NULL), 12, "bind %s -> %s", src, dst);
	if (ro)
		CHK(mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 13, "remount ro %s", dst);
}

/* full=1: FRESH (A) tree incl. /tmp, /home/sandbox tmpfs and /work bind.
 * full=0: template tree (per-sandbox mounts left to the sandbox). Both get /proc. */
static void build_tree(int full)
{
	char p[512], d[512];
	struct stat st;
	CHK(mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m"), 14, "tmpfs root");
	snprintf(p, sizeof p, NEWROOT "/usr"); mkfile(p, 1);
	bind_ro("/usr", p, 1);
	for (size_t i = 0; i < NELEM(usr_links); i++) {
		snprintf(p, sizeof p, NEWROOT "/%s", usr_links[i][0]);
		CHK(symlink(usr_links[i][1], p), 15, "symlink %s", p);
	}
	mkfile(NEWROOT "/etc", 1);
	mkfile(NEWROOT "/etc/ssl", 1);
	for (size_t i = 0; i < NELEM(etc_files); i++) {
		snprintf(p, sizeof p, NEWROOT "%s", etc_files[i]);
		CHK(stat(etc_files[i], &st), 16, "stat %s", etc_files[i]);
		mkfile(p, S_ISDIR(st.st_mode));
		bind_ro(etc_files[i], p, 1);
	}
	mkfile(NEWROOT "/dev", 1);
	for (size_t i = 0; i < NELEM(dev_nodes); i++) {
		snprintf(p, sizeof p, NEWROOT "%s", dev_nodes[i]);
		mkfile(p, 0);
		bind_ro(dev_nodes[i], p, 0);   /* device nodes: rw bind */
	}
	if (extra_mounts) {
		mkfile(NEWROOT "/extra", 1);
		for (int i = 0; i < extra_mounts; i++) {
			snprintf(d, sizeof d, NEWROOT "/extra/f%d", i);
			mkfile(d, 0);
			bind_ro("/etc/hostname", d, 1);
		}
	}
	mkfile(NEWROOT "/proc", 1);
	CHK(mkdir(NEWROOT "/tmp", 01777), 17, "mkdir tmp");
	mkfile(NEWROOT "/home", 1);
	mkfile(NEWROOT "/home/sandbox", 1);
	mkfile(NEWROOT "/work", 1);
	/* the shared root tmpfs is made read-only (needed for the template; same in A) */
	CHK(mount(NULL, NEWROOT, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), 18, "remount root ro");
	if (full) {
		CHK(mount("tmpfs", NEWROOT "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m"), 19, "tmpfs /tmp");
		CHK(mount("tmpfs", NEWROOT "/home/sandbox", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m"), 20, "tmpfs home");
		CHK(mount(WORKDIR, NEWROOT "/work", NULL, MS_BIND, NULL), 21, "bind workdir");
	}
	CHK(mount("proc", NEWROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL), 22, "mount proc");
}

static void do_pivot(void)
{
	CHK(chdir(NEWROOT), 23, "chdir newroot");
	CHK(sys_pivot_root(".", "."), 24, "pivot_root");
	TS(T_PIVOT);
	CHK(umount2(".", MNT_DETACH), 25, "umount old root");
	CHK(chdir("/"), 26, "chdir /");
}

/* ---------- the command run inside each sandbox ---------- */
/* cmd: 't' exec /bin/true; 'm' report mountinfo + write checks; 'h' write markers and hold;
 *      'l' list /tmp and /home/sandbox */
static int hold_rfd = -1;

static void append_info(const char *fmt, ...)
{
	size_t n = strlen(S->info);
	va_list ap; va_start(ap, fmt);
	vsnprintf(S->info + n, sizeof S->info - n, fmt, ap);
	va_end(ap);
}

static void try_write(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	append_info("write %-24s -> %s\n", path, fd >= 0 ? "OK" : strerror(errno));
	if (fd >= 0) { close(fd); unlink(path); }
}

static void list_dir(const char *d)
{
	DIR *dir = opendir(d);
	struct dirent *e;
	int n = 0;
	append_info("ls %s:", d);
	if (!dir) { append_info(" (%s)\n", strerror(errno)); return; }
	while ((e = readdir(dir))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
		append_info(" %s", e->d_name); n++;
	}
	closedir(dir);
	append_info(" [%d entries]\n", n);
}

static void command_body(int cmd)
{
	if (cmd == 't') {
		char *argv[] = { "/bin/true", NULL }, *envp[] = { "PATH=/usr/bin:/bin", NULL };
		execve("/bin/true", argv, envp);
		_exit(127);
	}
	if (cmd == 'm') {
		FILE *f = fopen("/proc/self/mountinfo", "re");
		char line[1024];
		int n = 0;
		S->info[0] = 0;
		if (!f) _exit(2);
		while (fgets(line, sizeof line, f)) { append_info("%s", line); n++; }
		fclose(f);
		append_info("#mounts %d\n", n);
		try_write("/usr/mnttpl.probe");
		try_write("/mnttpl.probe");
		try_write("/etc/mnttpl.probe");
		try_write("/tmp/mnttpl.probe");
		try_write("/home/sandbox/mnttpl.probe");
		try_write("/work/mnttpl.probe");
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		append_info("write /dev/null -> %s\n", (fd >= 0 && write(fd, "x", 1) == 1) ? "OK" : strerror(errno));
		append_info("getpid() in sandbox = %d\n", getpid());
		pid_t p = fork();
		if (p == 0) {
			char *argv[] = { "/bin/true", NULL }, *envp[] = { NULL };
			execve("/bin/true", argv, envp); _exit(127);
		}
		int st; waitpid(p, &st, 0);
		append_info("exec /bin/true -> status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		/* escape probes (done last; they change only this sandbox's own namespace) */
		append_info("remount / rw (bind)      -> %s\n", mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL) == 0 ? "OK" : strerror(errno));
		append_info("remount / rw (superblock)-> %s\n", mount(NULL, "/", NULL, MS_REMOUNT, NULL) == 0 ? "OK" : strerror(errno));
		append_info("umount /proc (1st)       -> %s\n", umount2("/proc", MNT_DETACH) == 0 ? "OK" : strerror(errno));
		append_info("umount /proc (2nd)       -> %s\n", umount2("/proc", MNT_DETACH) == 0 ? "OK" : strerror(errno));
		append_info("umount /usr              -> %s\n", umount2("/usr", MNT_DETACH) == 0 ? "OK" : strerror(errno));
		_exit(0);
	}
	if (cmd == 'h') {
		char b;
		int fd = open("/tmp/marker-from-holder", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		int fd2 = open("/home/sandbox/marker-from-holder", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || fd2 < 0) _exit(3);
		S->info[0] = 0;
		list_dir("/tmp");
		S->hold_ready = 1;
		if (read(hold_rfd, &b, 1) < 0) _exit(4);   /* block until released */
		_exit(0);
	}
	if (cmd == 'l') {
		list_dir("/tmp");
		list_dir("/home/sandbox");
		_exit(0);
	}
	_exit(126);
}

/* init of a sandbox: fork the command, wait, exit */
static void run_command(int cmd)
{
	pid_t p = fork();
	if (p < 0) die_child(30, "fork cmd");
	if (p == 0) command_body(cmd);
	TS(T_FORK);
	int st;
	if (waitpid(p, &st, 0) < 0) die_child(31, "waitpid cmd");
	TS(T_REAP);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) { errno = 0; die_child(32, "cmd status 0x%x", st); }
	_exit(0);
}

/* ---------- maps ---------- */
static void write_file(const char *path, const char *s, int forchild)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s)) {
		if (forchild) die_child(40, "write %s", path);
		xdie("write %s", path);
	}
	close(fd);
}

static void write_maps(pid_t pid, int intemplate)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/setgroups", pid); write_file(p, "deny", intemplate);
	snprintf(p, sizeof p, "/proc/%d/uid_map", pid);   write_file(p, "0 0 1\n", intemplate);
	snprintf(p, sizeof p, "/proc/%d/gid_map", pid);   write_file(p, "0 0 1\n", intemplate);
}

static unsigned long netflag = CLONE_NEWNET;   /* -n: drop CLONE_NEWNET in A, B and C (diagnostic) */
#define NS_ALL_BUT_USER (CLONE_NEWNS | CLONE_NEWPID | netflag | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)

/* ---------- variant A ---------- */
static int run_fresh(int cmd)
{
	int go[2];
	memset(&S->cur, 0, sizeof S->cur);
	int64_t c0 = cpu_ns(), ch0 = child_us();
	TS(T_START);
	if (pipe2(go, O_CLOEXEC) < 0) xdie("pipe");
	TS(T_CLONE0);
	pid_t pid = sys_clone(CLONE_NEWUSER | NS_ALL_BUT_USER);
	if (pid < 0) xdie("clone A");
	if (pid == 0) {
		char b;
		close(go[1]);
		if (read(go[0], &b, 1) != 1) die_child(1, "go");
		close(go[0]);
		TS(T_GO);
		CHK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 2, "make / private");
		build_tree(1);
		TS(T_TREE);
		do_pivot();
		TS(T_MNT);
		run_command(cmd);
	}
	TS(T_CLONE);
	close(go[0]);
	write_maps(pid, 0);
	if (write(go[1], "g", 1) != 1) xdie("go write");
	close(go[1]);
	TS(T_MAPS);
	int st;
	if (waitpid(pid, &st, 0) < 0) xdie("waitpid A");
	TS(T_INITREAPED);
	S->cur.ts[T_REQ] = S->cur.ts[T_START];
	TS(T_END);
	S->cur.drv_self_ns = cpu_ns() - c0;
	S->cur.drv_child_us = child_us() - ch0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "A init failed: status 0x%x step %d: %s: %s\n", st, S->err_step, S->err_msg, strerror(S->err_errno));
		return -1;
	}
	return 0;
}

/* ---------- template ---------- */
static int tpl_req_rfd, tpl_rep_wfd;
static pid_t tpl_pid;
static int tpl_req_wfd, tpl_rep_rfd, hold_wfd;

static int tpl_wfd = -1, tpl_opath_fd = -1;   /* template: anon clone of workdir; O_PATH fd of workdir (probe only) */

static void sandbox_main(int variant, int cmd, int wfd2, int gofd)
{
	if (variant == 'C') {
		char b;
		if (read(gofd, &b, 1) != 1) die_child(50, "go C");
		close(gofd);
	}
	TS(T_GO);
	CHK(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL), 51, "sandbox proc");
	if (cmd == 'p') {   /* probe the alternatives for reaching the workdir */
		char p[64];
		int fd;
		S->info[0] = 0;
		snprintf(p, sizeof p, "/proc/self/fd/%d", tpl_opath_fd);
		append_info("mount(%s [O_PATH fd opened before pivot], /work, MS_BIND) -> %s\n", p,
			    mount(p, "/work", NULL, MS_BIND, NULL) == 0 ? "OK" : strerror(errno));
		if (errno == 0) umount2("/work", MNT_DETACH);
		fd = sys_open_tree(tpl_opath_fd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH);
		append_info("open_tree(O_PATH fd, OPEN_TREE_CLONE) in sandbox -> %s\n", fd >= 0 ? "OK" : strerror(errno));
		fd = sys_open_tree(tpl_wfd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH);
		append_info("open_tree(template's detached workdir tree, OPEN_TREE_CLONE) in sandbox -> %s\n", fd >= 0 ? "OK" : strerror(errno));
		cmd = 't';
	}
	CHK(mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m"), 52, "sandbox tmpfs /tmp");
	CHK(mount("tmpfs", "/home/sandbox", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64m"), 53, "sandbox tmpfs home");
	CHK(sys_move_mount(wfd2, "", AT_FDCWD, "/work", MOVE_MOUNT_F_EMPTY_PATH), 54, "move_mount workdir");
	close(wfd2);
	TS(T_MNT);
	run_command(cmd);
}

static void template_main(int gofd)
{
	char b, req[2];
	pid_t held = 0;
	if (read(gofd, &b, 1) != 1) die_child(60, "tpl go");
	close(gofd);
	CHK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 61, "tpl private");
	/* workdir: detached clone made before pivot_root; cloned again per sandbox */
	int wfd = sys_open_tree(AT_FDCWD, WORKDIR, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	CHK(wfd, 62, "open_tree workdir");
	tpl_wfd = wfd;
	tpl_opath_fd = open(WORKDIR, O_PATH | O_CLOEXEC);
	build_tree(0);
	do_pivot();
	if (write(tpl_rep_wfd, "r", 1) != 1) _exit(63);
	for (;;) {
		if (read(tpl_req_rfd, req, 2) != 2) _exit(64);
		int variant = req[0], cmd = req[1];
		if (variant == 'q') {
			if (held) waitpid(held, NULL, 0);
			_exit(0);
		}
		if (variant == 'r') {   /* reap the held sandbox */
			int st = -1;
			waitpid(held, &st, 0); held = 0;
			b = (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : 1;
			if (write(tpl_rep_wfd, &b, 1) != 1) _exit(65);
			continue;
		}
		memset(&S->cur.ts[T_CLONE0], 0, sizeof(uint64_t) * (T_N - T_CLONE0));
		TS(T_REQ);
		int64_t c0 = cpu_ns(), ch0 = child_us();
		int go[2] = { -1, -1 };
		int wfd2 = sys_open_tree(wfd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (wfd2 < 0) die_child(66, "open_tree clone");
		unsigned long fl = NS_ALL_BUT_USER;
		if (variant == 'C') {
			fl |= CLONE_NEWUSER;
			if (pipe2(go, O_CLOEXEC) < 0) die_child(67, "pipe");
		}
		TS(T_CLONE0);
		pid_t pid = sys_clone(fl);
		if (pid < 0) die_child(68, "clone sandbox");
		if (pid == 0) {
			if (go[1] >= 0) close(go[1]);
			sandbox_main(variant, cmd, wfd2, go[0]);
		}
		TS(T_CLONE);
		close(wfd2);
		if (variant == 'C') {
			close(go[0]);
			write_maps(pid, 1);
			if (write(go[1], "g", 1) != 1) die_child(69, "go write");
			close(go[1]);
		}
		TS(T_MAPS);
		if (cmd == 'h') {
			held = pid;
			b = 0;
			if (write(tpl_rep_wfd, &b, 1) != 1) _exit(70);
			continue;
		}
		int st;
		if (waitpid(pid, &st, 0) < 0) die_child(71, "waitpid sandbox");
		TS(T_INITREAPED);
		S->cur.tpl_self_ns = cpu_ns() - c0;
		S->cur.tpl_child_us = child_us() - ch0;
		b = (WIFEXITED(st) && WEXITSTATUS(st) == 0) ? 0 : (WIFEXITED(st) ? WEXITSTATUS(st) : 99);
		if (write(tpl_rep_wfd, &b, 1) != 1) _exit(72);
	}
}

static void start_template(void)
{
	int req[2], rep[2], go[2], hold[2];
	if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC) || pipe2(go, O_CLOEXEC) || pipe2(hold, O_CLOEXEC)) xdie("pipes");
	pid_t pid = sys_clone(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID);
	if (pid < 0) xdie("clone template");
	if (pid == 0) {
		close(req[1]); close(rep[0]); close(go[1]); close(hold[1]);
		tpl_req_rfd = req[0]; tpl_rep_wfd = rep[1]; hold_rfd = hold[0];
		template_main(go[0]);
	}
	close(req[0]); close(rep[1]); close(go[0]); close(hold[0]);
	tpl_req_wfd = req[1]; tpl_rep_rfd = rep[0]; hold_wfd = hold[1];
	write_maps(pid, 0);
	if (write(go[1], "g", 1) != 1) xdie("tpl go");
	close(go[1]);
	char b;
	if (read(tpl_rep_rfd, &b, 1) != 1) {
		int st; waitpid(pid, &st, 0);
		fprintf(stderr, "template failed: status 0x%x step %d: %s: %s\n", st, S->err_step, S->err_msg, strerror(S->err_errno));
		exit(1);
	}
	tpl_pid = pid;
}

static void stop_template(void)
{
	char q[2] = { 'q', 0 };
	if (write(tpl_req_wfd, q, 2) != 2) xdie("q");
	waitpid(tpl_pid, NULL, 0);
	close(tpl_req_wfd); close(tpl_rep_rfd); close(hold_wfd);
}

static int run_template(int variant, int cmd)
{
	char req[2] = { (char)variant, (char)cmd }, b;
	memset(&S->cur, 0, sizeof S->cur);
	int64_t c0 = cpu_ns();
	TS(T_START);
	if (write(tpl_req_wfd, req, 2) != 2) xdie("req");
	if (read(tpl_rep_rfd, &b, 1) != 1) xdie("rep (template died?) step %d %s", S->err_step, S->err_msg);
	TS(T_END);
	S->cur.drv_self_ns = cpu_ns() - c0;
	if (b) {
		fprintf(stderr, "%c sandbox failed: status %d step %d: %s: %s\n", variant, b, S->err_step, S->err_msg, strerror(S->err_errno));
		return -1;
	}
	return 0;
}

static int run_variant(int v, int cmd)
{
	return v == 'A' ? run_fresh(cmd) : run_template(v, cmd);
}

/* ---------- RCU kthread wakeups (voluntary context switches) ---------- */
static int rcu_exp_pid = -1, rcu_gp_pid = -1;
static void find_rcu_pids(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	char p[64], comm[64];
	while (d && (e = readdir(d))) {
		int pid = atoi(e->d_name);
		if (pid <= 0 || pid > 1000) continue;
		snprintf(p, sizeof p, "/proc/%d/comm", pid);
		FILE *f = fopen(p, "re");
		if (!f) continue;
		if (fgets(comm, sizeof comm, f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, "rcu_exp_gp_kthread_worker")) rcu_exp_pid = pid;
			if (!strcmp(comm, "rcu_preempt") || !strcmp(comm, "rcu_sched")) rcu_gp_pid = pid;
		}
		fclose(f);
	}
	if (d) closedir(d);
}
static long vcsw(int pid)
{
	char p[64], line[256];
	long v = -1;
	if (pid < 0) return 0;
	snprintf(p, sizeof p, "/proc/%d/status", pid);
	FILE *f = fopen(p, "re");
	if (!f) return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1) break;
	fclose(f);
	return v;
}

/* ---------- /proc/stat ---------- */
struct cpustat { unsigned long long busy, idle, total; };
static struct cpustat read_stat(void)
{
	struct cpustat c = { 0 };
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			 &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 8) xdie("/proc/stat");
	fclose(f);
	c.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	c.idle = v[3] + v[4];
	c.total = c.busy + c.idle;
	return c;
}

/* ---------- stats ---------- */
static int cmpd(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return x < y ? -1 : x > y; }
static double pct(double *v, int n, double p)
{
	qsort(v, n, sizeof *v, cmpd);
	double idx = p * (n - 1);
	int i = (int)idx; double fr = idx - i;
	return i + 1 < n ? v[i] * (1 - fr) + v[i + 1] * fr : v[i];
}

static struct rec *recs[3];
static int nrec[3];

static double seg(const struct rec *r, int a, int b) { return (r->ts[a] && r->ts[b]) ? (r->ts[b] - r->ts[a]) / 1e3 : 0; }

static void summarize(FILE *out, int vi)
{
	int n = nrec[vi];
	double *v = malloc(sizeof(double) * n);
	const char vn = "ABC"[vi];
	struct { const char *name; int a, b; } segs[] = {
		{ "TOTAL wall (us)", T_START, T_END },
		{ "  drv->tpl request latency", T_START, T_REQ },
		{ "  clone() syscall (parent)", T_CLONE0, T_CLONE },
		{ "  clone -> child running", T_CLONE0, T_GO },
		{ "  maps written (parent)", T_CLONE, T_MAPS },
		{ "  mounts (go->mnt)", T_GO, T_MNT },
		{ "    A: private+build tree", T_GO, T_TREE },
		{ "    A: pivot_root", T_TREE, T_PIVOT },
		{ "    A: umount2 old root", T_PIVOT, T_MNT },
		{ "  fork+exec+exit /bin/true", T_FORK, T_REAP },
		{ "  init exit+teardown->reaped", T_REAP, T_INITREAPED },
		{ "  reaped -> driver end", T_INITREAPED, T_END },
	};
	fprintf(out, "Variant %c: n=%d\n", vn, n);
	fprintf(out, "  %-32s %10s %10s %10s %10s\n", "segment (us)", "p10", "median", "p90", "mean");
	for (size_t s = 0; s < NELEM(segs); s++) {
		int m = 0; double sum = 0;
		for (int i = 0; i < n; i++) { double x = seg(&recs[vi][i], segs[s].a, segs[s].b); if (x > 0) { v[m++] = x; sum += x; } }
		if (!m) continue;
		double p10 = pct(v, m, .1), p50 = pct(v, m, .5), p90 = pct(v, m, .9);
		fprintf(out, "  %-32s %10.1f %10.1f %10.1f %10.1f\n", segs[s].name, p10, p50, p90, sum / m);
	}
	/* per-run process CPU */
	double sum = 0; int m = 0;
	for (int i = 0; i < n; i++) {
		const struct rec *r = &recs[vi][i];
		double c = r->drv_self_ns / 1e3 + r->drv_child_us + r->tpl_self_ns / 1e3 + r->tpl_child_us;
		v[m++] = c; sum += c;
	}
	fprintf(out, "  %-32s %10.1f %10.1f %10.1f %10.1f\n", "CPU/run processes (us)", pct(v, m, .1), pct(v, m, .5), pct(v, m, .9), sum / m);
	struct { const char *name; int k; } cs[] = { { "    driver self", 0 }, { "    driver reaped children", 1 }, { "    template self", 2 }, { "    template reaped children", 3 } };
	for (int k = 0; k < 4; k++) {
		double s2 = 0;
		for (int i = 0; i < n; i++) {
			const struct rec *r = &recs[vi][i];
			double c = k == 0 ? r->drv_self_ns / 1e3 : k == 1 ? r->drv_child_us : k == 2 ? r->tpl_self_ns / 1e3 : r->tpl_child_us;
			v[i] = c; s2 += c;
		}
		if (s2 == 0) continue;
		fprintf(out, "  %-32s %10.1f %10.1f %10.1f %10.1f\n", cs[k].name, pct(v, n, .1), pct(v, n, .5), pct(v, n, .9), s2 / n);
	}
	free(v);
}

static double median_total(int vi)
{
	int n = nrec[vi];
	double *v = malloc(sizeof(double) * n), r;
	for (int i = 0; i < n; i++) v[i] = seg(&recs[vi][i], T_START, T_END);
	r = pct(v, n, .5); free(v); return r;
}

static void dump_csv(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) xdie("csv %s", path);
	fprintf(f, "variant,idx");
	for (int t = 0; t < T_N; t++) fprintf(f, ",%s", tname[t]);
	fprintf(f, ",drv_self_ns,drv_child_us,tpl_self_ns,tpl_child_us\n");
	for (int vi = 0; vi < 3; vi++)
		for (int i = 0; i < nrec[vi]; i++) {
			const struct rec *r = &recs[vi][i];
			fprintf(f, "%c,%d", "ABC"[vi], i);
			for (int t = 0; t < T_N; t++) fprintf(f, ",%llu", (unsigned long long)r->ts[t]);
			fprintf(f, ",%lld,%lld,%lld,%lld\n", (long long)r->drv_self_ns, (long long)r->drv_child_us, (long long)r->tpl_self_ns, (long long)r->tpl_child_us);
		}
	fclose(f);
}

static void loadavg(const char *when)
{
	char buf[128] = { 0 };
	int fd = open("/proc/loadavg", O_RDONLY);
	if (fd >= 0) { if (read(fd, buf, sizeof buf - 1) < 0) buf[0] = 0; close(fd); }
	printf("loadavg %s: %s", when, buf);
}

/* ---------- modes ---------- */
static void check_mode(void)
{
	const char *vs = "ABC";
	for (int i = 0; i < 3; i++) {
		S->info[0] = 0;
		if (run_variant(vs[i], 'm') < 0) exit(1);
		printf("===== variant %c: /proc/self/mountinfo of the sandboxed command + probes =====\n%s\n", vs[i], S->info);
	}
	for (int i = 1; i < 3; i++) {
		if (run_template(vs[i], 'p') < 0) exit(1);
		printf("===== workdir probes, variant %c (template pivoted, old root detached):\n%s", vs[i], S->info);
	}
	/* isolation: holder sandbox writes /tmp marker and stays alive; second sandbox lists /tmp */
	for (int i = 1; i < 3; i++) {
		char v = vs[i], b, r2[2] = { 'r', 0 };
		S->hold_ready = 0;
		if (run_template(v, 'h') < 0) exit(1);
		for (int k = 0; k < 5000 && !S->hold_ready; k++) usleep(1000);
		printf("===== isolation %c: holder sandbox (alive): %s", v, S->info);
		S->info[0] = 0;
		if (run_template(v, 'l') < 0) exit(1);
		printf("===== isolation %c: second sandbox while holder alive:\n%s", v, S->info);
		if (write(hold_wfd, "x", 1) != 1) xdie("release");
		if (write(tpl_req_wfd, r2, 2) != 2 || read(tpl_rep_rfd, &b, 1) != 1) xdie("reap held");
		printf("holder exit ok: %s\n", b == 0 ? "yes" : "no");
	}
}

static void bench_mode(int runs, int warm, const char *csv)
{
	const char *order[3] = { "ABC", "BCA", "CAB" };
	for (int i = 0; i < 3; i++) { recs[i] = calloc(runs, sizeof(struct rec)); nrec[i] = 0; }
	for (int r = 0; r < warm; r++)
		for (int j = 0; j < 3; j++) if (run_variant(order[r % 3][j], 't') < 0) exit(1);
	loadavg("before");
	struct cpustat s0 = read_stat();
	uint64_t t0 = now_ns();
	long exp_w[3] = { 0 }, gp_w[3] = { 0 };
	for (int r = 0; r < runs; r++)
		for (int j = 0; j < 3; j++) {
			int v = order[r % 3][j], vi = v - 'A';
			long e0 = vcsw(rcu_exp_pid), g0 = vcsw(rcu_gp_pid);
			if (run_variant(v, 't') < 0) exit(1);
			exp_w[vi] += vcsw(rcu_exp_pid) - e0; gp_w[vi] += vcsw(rcu_gp_pid) - g0;
			recs[vi][nrec[vi]++] = S->cur;
		}
	uint64_t t1 = now_ns();
	struct cpustat s1 = read_stat();
	loadavg("after ");
	printf("alternated run: %d rounds x 3 variants (rotating order ABC/BCA/CAB), %d warm-up rounds discarded, %.2f s wall, "
	       "/proc/stat busy %llu ticks of %llu\n",
	       runs, warm, (t1 - t0) / 1e9, s1.busy - s0.busy, s1.total - s0.total);
	for (int i = 0; i < 3; i++) summarize(stdout, i);
	for (int i = 0; i < 3; i++)
		printf("RCU kthread wakeups per run (during the run): %c: rcu_exp_gp_kthread_worker %.2f, %s %.2f\n",
		       "ABC"[i], (double)exp_w[i] / nrec[i], rcu_gp_pid > 0 ? "rcu_preempt" : "-", (double)gp_w[i] / nrec[i]);
	double a = median_total(0), b = median_total(1), c = median_total(2);
	printf("median total: A %.1f us, B %.1f us, C %.1f us; B/A %.3f, C/A %.3f\n", a, b, c, b / a, c / a);
	if (csv) { dump_csv(csv); printf("raw per-run data: %s\n", csv); }
}

/* machine CPU from /proc/stat over blocks of runs (blocks alternate A,B,C rotating) */
static void cpu_mode(int blocks, int per_block, int settle_ms)
{
	const char *order[3] = { "ABC", "BCA", "CAB" };
	long hz = sysconf(_SC_CLK_TCK);
	int ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double busy[3] = { 0 }, busy2[3] = { 0 }, wall[3] = { 0 };
	int nruns[3] = { 0 };
	long expw[3] = { 0 };
	/* background: idle blocks of settle+typical length */
	double bg_busy = 0, bg_wall = 0;
	loadavg("before");
	for (int b = 0; b < blocks; b++) {
		for (int j = 0; j < 3; j++) {
			int v = order[b % 3][j], vi = v - 'A';
			long e0 = vcsw(rcu_exp_pid);
			struct cpustat s0 = read_stat();
			uint64_t t0 = now_ns();
			for (int i = 0; i < per_block; i++) if (run_variant(v, 't') < 0) exit(1);
			usleep(settle_ms * 1000);   /* let async work (netns cleanup, delayed mntput, RCU) land in this block */
			struct cpustat s1 = read_stat();
			uint64_t t1 = now_ns();
			expw[vi] += vcsw(rcu_exp_pid) - e0;
			busy[vi] += s1.busy - s0.busy;
			/* busy derived from idle+iowait (nohz idle time, more precise than tick sampling) */
			busy2[vi] += (double)(t1 - t0) / 1e9 * hz * ncpu - (s1.idle - s0.idle);
			wall[vi] += (t1 - t0) / 1e9;
			nruns[vi] += per_block;
		}
		struct cpustat s0 = read_stat();
		uint64_t t0 = now_ns();
		usleep(1000 * 1000);
		struct cpustat s1 = read_stat();
		uint64_t t1 = now_ns();
		bg_busy += s1.busy - s0.busy;
		bg_wall += (t1 - t0) / 1e9;
	}
	loadavg("after ");
	double bg_rate = bg_busy / bg_wall;  /* ticks per second of background */
	printf("machine CPU via /proc/stat (USER_HZ=%ld, %d cpus), %d blocks x %d runs per variant, settle %d ms per block\n",
	       hz, ncpu, blocks, per_block, settle_ms);
	printf("background (idle blocks): %.2f ticks/s = %.2f ms CPU per s\n", bg_rate, bg_rate * 1000.0 / hz);
	for (int vi = 0; vi < 3; vi++) {
		double us = busy[vi] * 1e6 / hz / nruns[vi];
		double us_bg = (busy[vi] - bg_rate * wall[vi]) * 1e6 / hz / nruns[vi];
		double us2 = busy2[vi] * 1e6 / hz / nruns[vi];
		printf("  %c: runs %d, block wall %.2f s, busy ticks %.0f -> %.1f us CPU/run raw, %.1f us/run minus background; "
		       "(from idle counter: %.1f us/run raw); exp-GP worker wakeups/run %.2f\n",
		       "ABC"[vi], nruns[vi], wall[vi], busy[vi], us, us_bg, us2, (double)expw[vi] / nruns[vi]);
	}
}

/* umount microbenchmark in a private user+mount ns:
 *   tmpfs mount + umount2(flags) of a single mount, and a tmpfs with N binds umounted lazily as a tree */
static void umount_child(int iters)
{
	int nlist[] = { 0, 1, 8, 32, 128 };
	double *v = malloc(sizeof(double) * iters);
	char p[256];
	CHK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 80, "private");
	for (int fl = 0; fl < 2; fl++)
		for (size_t k = 0; k < NELEM(nlist); k++) {
			int n = nlist[k];
			long e0 = vcsw(rcu_exp_pid), g0 = vcsw(rcu_gp_pid);
			double sum = 0;
			for (int i = 0; i < iters; i++) {
				CHK(mount("tmpfs", NEWROOT, "tmpfs", 0, "size=1m"), 81, "tmpfs");
				for (int j = 0; j < n; j++) {
					snprintf(p, sizeof p, NEWROOT "/f%d", j);
					mkfile(p, 0);
					CHK(mount("/etc/hostname", p, NULL, MS_BIND, NULL), 82, "bind");
				}
				uint64_t t0 = now_ns();
				if (fl == 0 && n > 0) {   /* non-lazy: children first, then root */
					for (int j = n - 1; j >= 0; j--) { snprintf(p, sizeof p, NEWROOT "/f%d", j); CHK(umount2(p, 0), 83, "umount child"); }
					CHK(umount2(NEWROOT, 0), 84, "umount root");
				} else
					CHK(umount2(NEWROOT, fl ? MNT_DETACH : 0), 85, "umount");
				v[i] = (now_ns() - t0) / 1e3; sum += v[i];
			}
			long de = vcsw(rcu_exp_pid) - e0, dg = vcsw(rcu_gp_pid) - g0;
			printf("  umount2(%s) of tmpfs + %3d binds: median %8.1f us  p10 %8.1f  p90 %8.1f  mean %8.1f; "
			       "exp-GP worker wakeups/iter %.2f, rcu_preempt wakeups/iter %.2f\n",
			       fl ? "MNT_DETACH, whole tree" : "0, one by one       ", n, pct(v, iters, .5), pct(v, iters, .1), pct(v, iters, .9),
			       sum / iters, (double)de / iters, (double)dg / iters);
		}
	_exit(0);
}

static void umount_mode(int iters)
{
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0) xdie("pipe");
	pid_t pid = sys_clone(CLONE_NEWUSER | CLONE_NEWNS);
	if (pid == 0) { char b; close(go[1]); if (read(go[0], &b, 1) != 1) _exit(1); umount_child(iters); }
	close(go[0]);
	write_maps(pid, 0);
	if (write(go[1], "g", 1) != 1) xdie("go");
	int st; waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) fprintf(stderr, "umount child failed 0x%x step %d %s %s\n", st, S->err_step, S->err_msg, strerror(S->err_errno));
}

/* scaling: template with N extra mounts; alternate A/B/C with the same extra in all */
static void usage(void)
{
	fprintf(stderr,
		"usage: mnttpl [-x extra_mounts] check\n"
		"       mnttpl [-x extra_mounts] bench RUNS WARMUP [csv]\n"
		"       mnttpl [-x extra_mounts] cpu BLOCKS RUNS_PER_BLOCK SETTLE_MS\n"
		"       mnttpl umount ITERS\n"
		"  -x N  add N extra read-only bind mounts to the tree (A and template)\n"
		"  -n    drop CLONE_NEWNET from all variants (diagnostic)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "x:n")) != -1) {
		if (opt == 'x') extra_mounts = atoi(optarg);
		else if (opt == 'n') netflag = 0;
		else usage();
	}
	if (optind >= argc) usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	find_rcu_pids();
	S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED) xdie("mmap");
	mkdir(BASE, 0755); mkdir(NEWROOT, 0755); mkdir(WORKDIR, 0755);
	const char *mode = argv[optind];
	if (!strcmp(mode, "umount") && argc - optind >= 2) { umount_mode(atoi(argv[optind + 1])); return 0; }
	start_template();
	if (!strcmp(mode, "check")) check_mode();
	else if (!strcmp(mode, "bench") && argc - optind >= 3)
		bench_mode(atoi(argv[optind + 1]), atoi(argv[optind + 2]), argc - optind >= 4 ? argv[optind + 3] : NULL);
	else if (!strcmp(mode, "cpu") && argc - optind >= 4)
		cpu_mode(atoi(argv[optind + 1]), atoi(argv[optind + 2]), atoi(argv[optind + 3]));
	else usage();
	stop_template();
	return 0;
}

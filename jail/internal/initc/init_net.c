// The jail's host name and, when it has a network namespace of its own,
// its loopback interface, and in the allow mode the listeners the
// supervisor serves.
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "init_internal.h"

int tj_hostname(struct tj_builder *b) {
	const char *name = b->p->hostname;
	if (sethostname(name, strlen(name)) < 0) {
		return tj_failed(b, TJ_I_HOSTNAME, TJ_OP_NONE, errno, -1, name);
	}
	return 0;
}

// tj_loopback brings lo up in the jail's own network namespace (--net
// none); the kernel gives it 127.0.0.1 and ::1.
int tj_loopback(struct tj_builder *b) {
	if (!b->p->netnone) {
		return 0;
	}
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		return tj_failed(b, TJ_I_LOOPBACK, TJ_OP_SOCKET, errno, -1, NULL);
	}
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	strcpy(ifr.ifr_name, "lo");
	int r = 0;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		r = tj_failed(b, TJ_I_LOOPBACK, TJ_OP_IOCTL_GET, errno, -1, NULL);
	} else {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0) {
			r = tj_failed(b, TJ_I_LOOPBACK, TJ_OP_IOCTL_SET, errno, -1, NULL);
		}
	}
	close(fd);
	return r;
}

// tj_net_listeners makes the allow mode's sockets on 127.0.0.1 in the
// jail's network namespace (only the init can: an unprivileged supervisor
// cannot enter it) and sends them to the supervisor, which serves them
// for the life of the run, in one record, and waits until the supervisor
// says it serves them before the command starts. The init keeps no copy:
// the command can connect to them, never accept on them. No SO_REUSEADDR or SO_REUSEPORT: the command runs as the same host
// uid, and either option would let it bind the same address beside them.
int tj_net_listeners(struct tj_builder *b) {
	if (!b->p->netallow) {
		return 0;
	}
	static const int types[4] = {SOCK_STREAM, SOCK_STREAM, SOCK_DGRAM, SOCK_STREAM};
	int fds[4] = {-1, -1, -1, -1};
	int r = 0;
	for (int i = 0; r == 0 && i < 4; i++) {
		int port = b->p->net_ports[i < 3 ? i : 2];
		fds[i] = socket(AF_INET, types[i] | SOCK_CLOEXEC, 0);
		if (fds[i] < 0) {
			r = tj_failed(b, TJ_I_NET_LISTEN, TJ_OP_SOCKET, errno, i, NULL);
			break;
		}
		struct sockaddr_in sa;
		memset(&sa, 0, sizeof sa);
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fds[i], (struct sockaddr *)&sa, sizeof sa) < 0) {
			r = tj_failed(b, TJ_I_NET_LISTEN, TJ_OP_BIND_PORT, errno, i, NULL);
		} else if (types[i] == SOCK_STREAM && listen(fds[i], SOMAXCONN) < 0) {
			r = tj_failed(b, TJ_I_NET_LISTEN, TJ_OP_LISTEN, errno, i, NULL);
		}
	}
	if (r == 0) {
		struct tj_record rec;
		memset(&rec, 0, offsetof(struct tj_record, path) + 1);
		rec.type = TJ_REC_NET;
		long n = tj_send_fds(b->sock, &rec, tj_record_size(&rec), fds, 4);
		if (n < 0) {
			r = tj_failed(b, TJ_I_NET_LISTEN, TJ_OP_SEND, (int)-n, 0, NULL);
		}
	}
	// Wait for the supervisor's byte: it serves them. Without it the
	// command must not start (the supervisor ends the run instead).
	if (r == 0) {
		char ack;
		ssize_t n;
		while ((n = recv(b->sock, &ack, 1, 0)) < 0 && errno == EINTR) {
		}
		if (n != 1) {
			r = -1; // the supervisor is gone, or gave up on this run
		}
	}
	for (int i = 0; i < 4; i++) {
		if (fds[i] >= 0) {
			close(fds[i]);
		}
	}
	return r;
}

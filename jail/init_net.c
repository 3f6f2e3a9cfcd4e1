// The jail's host name and, when it has a network namespace of its own,
// its loopback interface.
#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
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

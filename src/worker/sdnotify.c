/* SPDX-License-Identifier: BSD-2-Clause */
/* sdnotify: a datagram to $NOTIFY_SOCKET, path or abstract ("@name"). */
#define _DEFAULT_SOURCE
#include "worker/sdnotify.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int
sdnotify_send(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t plen;

	if (path == NULL || path[0] == '\0')
		return 0;
	plen = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || plen >= sizeof sa.sun_path)
		return -1;
	memcpy(sa.sun_path, path, plen);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	ssize_t w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen));
	close(fd);
	return w < 0 ? -1 : 0;
}

long
sdnotify_watchdog_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");

	if (usec == NULL)
		return 0;
	if (pid != NULL && strtol(pid, NULL, 10) != (long)getpid())
		return 0;
	return strtol(usec, NULL, 10) / 1000;
}

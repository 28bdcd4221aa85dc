/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * collector/control.c - a recorder's control FIFO, as perf record's
 * --control=fifo:CTL[,ACK] (and what magic-trace's triggers write to):
 * commands one per line, "snapshot" (take a PT snapshot now), "stop" (end
 * the recording as ^C does), "ping"; each is answered with "ack\n" on the
 * ACK FIFO when there is one.
 */
#include "collector/rec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hwt_coll_ctl_open(struct hwt_coll_ctl *c, const char *ctl, const char *ack, char *errmsg,
		      size_t len)
{
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->fd = c->ack_fd = -1;
	/* O_RDWR: the FIFO never reads EOF when writers come and go. */
	c->fd = open(ctl, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (c->fd < 0 || fstat(c->fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		int e = c->fd < 0 ? errno : ENOTSUP;

		snprintf(errmsg, len,
			 "cannot use '%s' as the control FIFO: %s; create it with 'mkfifo %s'", ctl,
			 e == ENOTSUP ? "not a FIFO" : strerror(e), ctl);
		hwt_coll_ctl_close(c);
		return -e;
	}
	if (ack) {
		c->ack_fd = open(ack, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (c->ack_fd < 0 || fstat(c->ack_fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
			int e = c->ack_fd < 0 ? errno : ENOTSUP;

			snprintf(errmsg, len,
				 "cannot use '%s' as the ack FIFO: %s; create it with 'mkfifo %s'",
				 ack, e == ENOTSUP ? "not a FIFO" : strerror(e), ack);
			hwt_coll_ctl_close(c);
			return -e;
		}
	}
	return 0;
}

void hwt_coll_ctl_close(struct hwt_coll_ctl *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->ack_fd >= 0)
		close(c->ack_fd);
	c->fd = c->ack_fd = -1;
}

int hwt_coll_ctl_next(struct hwt_coll_ctl *c)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);

		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			int cmd = HWT_COLL_CTL_UNKNOWN;

			*nl = '\0';
			if (n && c->buf[n - 1] == '\r')
				c->buf[n - 1] = '\0';
			if (!strcmp(c->buf, "snapshot"))
				cmd = HWT_COLL_CTL_SNAPSHOT;
			else if (!strcmp(c->buf, "stop"))
				cmd = HWT_COLL_CTL_STOP;
			else if (!strcmp(c->buf, "ping"))
				cmd = HWT_COLL_CTL_PING;
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			if (c->ack_fd >= 0 && write(c->ack_fd, "ack\n", 4) != 4)
				c->ack_fd = c->ack_fd; /* a reader that went away */
			return cmd;
		}
		if (c->len == sizeof(c->buf))
			c->len = 0; /* an over-long line: dropped */
		{
			ssize_t r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

			if (r <= 0)
				return HWT_COLL_CTL_NONE;
			c->len += (size_t)r;
		}
	}
}

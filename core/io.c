/* SPDX-License-Identifier: MIT */
/*
 * core/io.c - reading kernel text files whole, into a reused buffer;
 * writing files whole, through a rename
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/io.h>

ssize_t tally_read_whole(int fd, struct tally_readbuf *rb)
{
	size_t len = 0;

	for (;;) {
		ssize_t n;

		if (rb->cap - len < 2) {
			size_t cap = rb->cap ? rb->cap * 2 : 8192;
			char *data = realloc(rb->data, cap);

			if (!data) {
				errno = ENOMEM;
				return -1;
			}
			rb->data = data;
			rb->cap = cap;
		}
		/* sequential offsets: seq_file continues the same pass */
		n = pread(fd, rb->data + len, rb->cap - len - 1, (off_t)len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	rb->data[len] = '\0';
	return (ssize_t)len;
}

void tally_readbuf_free(struct tally_readbuf *rb)
{
	free(rb->data);
	rb->data = NULL;
	rb->cap = 0;
}

int tally_parse_u64(const char **pp, uint64_t *v)
{
	const char *s = *pp;
	uint64_t x = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*pp = s;
	*v = x;
	return 0;
}

int tally_open_file(int dirfd, const char *rel)
{
	struct stat st;
	int fd = openat(dirfd, rel,
			O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

int tally_write_file(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX];
	const char *p = data;
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >=
	    (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return -1;
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto out_close;
		p += n;
		len -= (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto out_close;
	}
	if (rename(tmp, path) < 0) {
		fd = -1;
		goto out_close;
	}
	return 0;
out_close:
	e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	errno = e;
	return -1;
}

bool tally_pid_alive(uint32_t pid)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	/* EPERM: it exists, and belongs to someone else */
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return false;
	snprintf(path, sizeof(path), "/proc/%u/stat", (unsigned)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	/* "PID (COMM) S ...": COMM may hold ')' itself, the last one ends it */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return true;
	return p[2] != 'Z' && p[2] != 'X';
}

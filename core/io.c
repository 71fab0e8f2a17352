/* SPDX-License-Identifier: MIT */
/*
 * core/io.c - reading kernel text files whole, into a reused buffer
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
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

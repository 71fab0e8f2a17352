/* SPDX-License-Identifier: MIT */
/*
 * core/fdlimit.c - descriptor limits: raise the soft limit, and accept
 * connections so that running out of descriptors never kills tallyd
 *
 * Why accept is wrapped (tally/fdlimit.h): libzmq 4.3.4's ipc listener
 * accepts its peers on its own I/O thread and asserts that accept4()
 * failed with nothing but EAGAIN, EINTR, ECONNABORTED, EPROTO or ENFILE:
 * EMFILE aborts the process ("Too many open files
 * (src/ipc_listener.cpp:325)"). Watching descriptors from the loop thread
 * and unbinding in time cannot be made safe, since that thread may be
 * slower than the I/O thread accepting a burst of connections; refusing
 * inside accept itself can: the I/O thread never sees EMFILE, whatever
 * the timing. tallyd exports accept and accept4 (core/tallyd-accept.c),
 * which land here; only registered listeners are changed.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tally/fdlimit.h>

#include "core-internal.h"

/* A registered listener: fd + 1, so that 0 (static storage) is free. */
struct tally_accept_slot {
	_Atomic int fd1;
	_Atomic unsigned reserve;
	_Atomic uint64_t refused;
};

static struct tally_accept_slot tally_slots[TALLY_ACCEPT_LIMITS];
static pthread_mutex_t tally_slots_lock = PTHREAD_MUTEX_INITIALIZER;

/* The descriptor given up to take a connection when none is left. */
static int tally_spare_fd = -1;
static pthread_mutex_t tally_spare_lock = PTHREAD_MUTEX_INITIALIZER;

/* RLIMIT_NOFILE as tallyd found it, for the command it runs. */
static struct rlimit tally_nofile_orig;
static bool tally_nofile_changed;

static struct tally_accept_slot *tally_slot_find(int fd)
{
	for (int i = 0; i < TALLY_ACCEPT_LIMITS; i++)
		if (atomic_load_explicit(&tally_slots[i].fd1,
					 memory_order_acquire) == fd + 1)
			return &tally_slots[i];
	return NULL;
}

int tally_accept_limit(int fd, unsigned reserve)
{
	struct tally_accept_slot *s;
	int ret = 0;

	if (fd < 0) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&tally_slots_lock);
	s = tally_slot_find(fd);
	if (!s)
		s = tally_slot_find(-1); /* a free slot: fd1 == 0 */
	if (!s) {
		errno = ENOSPC;
		ret = -1;
		goto out;
	}
	atomic_store(&s->reserve, reserve ? reserve : tally_fd_reserve());
	if (atomic_load(&s->fd1) != fd + 1) {
		atomic_store(&s->refused, 0);
		atomic_store_explicit(&s->fd1, fd + 1, memory_order_release);
	}
out:
	pthread_mutex_unlock(&tally_slots_lock);
	return ret;
}

uint64_t tally_accept_unlimit(int fd)
{
	struct tally_accept_slot *s;
	uint64_t n = 0;

	pthread_mutex_lock(&tally_slots_lock);
	s = fd >= 0 ? tally_slot_find(fd) : NULL;
	if (s) {
		n = atomic_load(&s->refused);
		atomic_store(&s->fd1, 0);
	}
	pthread_mutex_unlock(&tally_slots_lock);
	return n;
}

uint64_t tally_accept_refused(int fd)
{
	struct tally_accept_slot *s = fd >= 0 ? tally_slot_find(fd) : NULL;

	return s ? atomic_load(&s->refused) : 0;
}

static rlim_t tally_nofile_soft(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	return rl.rlim_cur;
}

unsigned tally_fd_reserve(void)
{
	rlim_t n = tally_nofile_soft() / 8;

	if (n < 16)
		return 16;
	return n > 1024 ? 1024 : (unsigned)n;
}

int tally_fd_setup(unsigned *before, unsigned *after)
{
	struct rlimit rl;
	int ret = 0;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	tally_nofile_orig = rl;
	*before = rl.rlim_cur > UINT_MAX ? UINT_MAX : (unsigned)rl.rlim_cur;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		/* RLIM_INFINITY fails above fs.nr_open: keep what we had */
		if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
			tally_nofile_changed = true;
		else
			ret = -1;
	}
	*after = (unsigned)(tally_nofile_soft() > UINT_MAX
				    ? UINT_MAX
				    : tally_nofile_soft());
	pthread_mutex_lock(&tally_spare_lock);
	if (tally_spare_fd < 0)
		tally_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (tally_spare_fd < 0)
		ret = -1;
	pthread_mutex_unlock(&tally_spare_lock);
	return ret;
}

void tally_fd_restore(void)
{
	/* async-signal-safe: runs between fork and exec */
	if (tally_nofile_changed)
		setrlimit(RLIMIT_NOFILE, &tally_nofile_orig);
}

static int tally_sys_accept4(int fd, struct sockaddr *sa, socklen_t *len,
			     int flags)
{
	return (int)syscall(SYS_accept4, fd, sa, len, flags);
}

static void tally_refused(struct tally_accept_slot *s)
{
	if (s)
		atomic_fetch_add(&s->refused, 1);
}

/*
 * Out of descriptors: a connection waits on @fd, and the listener, woken
 * again and again by it, would spin. Give up the spare descriptor, take
 * the connection with it and close it (the peer sees its connection
 * closed, and retries later), then take the spare back. Without a spare
 * (another thread took the slot meanwhile) the connection stays queued.
 */
static void tally_accept_drop(int fd, struct tally_accept_slot *s)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int c;

	pthread_mutex_lock(&tally_spare_lock);
	if (tally_spare_fd < 0)
		tally_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* the listener may be blocking: accept only what is there */
	if (tally_spare_fd >= 0 && poll(&pfd, 1, 0) == 1) {
		close(tally_spare_fd);
		c = tally_sys_accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0) {
			close(c);
			tally_refused(s);
		}
		tally_spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	pthread_mutex_unlock(&tally_spare_lock);
}

int tally_accept_guarded(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	struct tally_accept_slot *s = tally_slot_find(fd);
	int c = tally_sys_accept4(fd, sa, len, flags);
	int err = errno;

	/* others' listeners (the prometheus output's) handle EMFILE well */
	if (!s)
		return c;
	if (c >= 0) {
		unsigned reserve;

		/* every descriptor below c is in use: c + 1 are taken */
		reserve = atomic_load(&s->reserve);
		if ((rlim_t)c + reserve < tally_nofile_soft())
			return c;
		close(c);
		tally_refused(s);
		errno = ECONNABORTED;
		return -1;
	}
	switch (err) {
	case EMFILE:
	case ENFILE:
		tally_accept_drop(fd, s);
		/* fall through */
	case ENOBUFS:
	case ENOMEM:
		errno = ECONNABORTED;
		return -1;
	}
	errno = err;
	return -1;
}

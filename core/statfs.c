/* SPDX-License-Identifier: MIT */
/*
 * core/statfs.c - statvfs(3) off the loop thread, with a timeout
 * (tally/statfs.h)
 *
 * One helper thread works through a run's paths; the caller waits on a
 * condition for progress. When a call makes no progress for the timeout,
 * its thread is abandoned (it frees itself when the call returns) and a
 * new one takes the remaining paths. The pool is reference-counted: the
 * owner and every thread hold a reference, so a thread hung for hours
 * after tally_statfs_free() still finds its mutex.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/statfs.h>

/**
 * struct statfs_worker - one helper thread
 * @fs:        the pool
 * @abandoned: its call took too long; it exits once the call returns
 * @busy:      in a statvfs() call
 * @idx:       the request it works on, while @busy
 * @path:      that request's path (a copy: the caller's may be gone when
 *             an abandoned call returns)
 * @next:      next in the pool's list of hung threads
 */
struct statfs_worker {
	struct tally_statfs *fs;
	bool abandoned;
	bool busy;
	size_t idx;
	char path[PATH_MAX];
	struct statfs_worker *next;
};

struct tally_statfs {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a run has requests, or the pool closes */
	pthread_cond_t done; /* a call finished */
	int refs;	     /* the owner and each thread */
	bool closed;
	double timeout;
	struct statfs_worker *cur;  /* the working thread, NULL if none */
	struct statfs_worker *hung; /* abandoned threads still in a call */
	struct tally_statfs_req *reqs; /* the run in progress, or NULL */
	size_t n, next, ndone;
	char *hang_path, *hang_flag; /* test hook */
};

static void statfs_destroy(struct tally_statfs *fs)
{
	pthread_mutex_destroy(&fs->mu);
	pthread_cond_destroy(&fs->work);
	pthread_cond_destroy(&fs->done);
	free(fs->hang_path);
	free(fs);
}

/* Drop one reference; called with fs->mu held, which it releases. */
static void statfs_unref_unlock(struct tally_statfs *fs)
{
	bool last = --fs->refs == 0;

	pthread_mutex_unlock(&fs->mu);
	if (last)
		statfs_destroy(fs);
}

static void statfs_test_hang(const struct tally_statfs *fs, const char *path)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };

	if (!fs->hang_path || strcmp(fs->hang_path, path) != 0)
		return;
	while (access(fs->hang_flag, F_OK) == 0)
		nanosleep(&tick, NULL);
}

static void statfs_unlink_hung(struct tally_statfs *fs,
			       struct statfs_worker *w)
{
	for (struct statfs_worker **pp = &fs->hung; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

static void *statfs_thread(void *arg)
{
	struct statfs_worker *w = arg;
	struct tally_statfs *fs = w->fs;

	pthread_mutex_lock(&fs->mu);
	for (;;) {
		struct statvfs st;
		int r, err;

		while (!fs->closed && fs->cur == w &&
		       (!fs->reqs || fs->next >= fs->n))
			pthread_cond_wait(&fs->work, &fs->mu);
		if (fs->closed || fs->cur != w)
			break;
		w->idx = fs->next++;
		if (fs->reqs[w->idx].err != EINPROGRESS)
			continue; /* answered already (EBUSY) */
		strncpy(w->path, fs->reqs[w->idx].path, sizeof(w->path) - 1);
		w->path[sizeof(w->path) - 1] = '\0';
		w->busy = true;
		pthread_mutex_unlock(&fs->mu);

		statfs_test_hang(fs, w->path);
		r = statvfs(w->path, &st);
		err = r < 0 ? errno : 0;

		pthread_mutex_lock(&fs->mu);
		w->busy = false;
		if (w->abandoned) {
			statfs_unlink_hung(fs, w);
			break;
		}
		fs->reqs[w->idx].err = err;
		if (!err)
			fs->reqs[w->idx].st = st;
		fs->ndone++;
		pthread_cond_signal(&fs->done);
	}
	if (fs->cur == w)
		fs->cur = NULL;
	free(w);
	statfs_unref_unlock(fs);
	return NULL;
}

/* Start a working thread; fs->mu held. Return: 0, or -1 (errno). */
static int statfs_start(struct tally_statfs *fs)
{
	struct statfs_worker *w = calloc(1, sizeof(*w));
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t t;
	int err;

	if (!w)
		return -1;
	w->fs = fs;
	/* signals go to the loop thread, never to a helper */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&t, &attr, statfs_thread, w);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		free(w);
		errno = err;
		return -1;
	}
	fs->refs++;
	fs->cur = w;
	return 0;
}

struct tally_statfs *tally_statfs_new(double timeout)
{
	const char *hook = getenv("TALLY_TEST_STATFS_HANG");
	struct tally_statfs *fs;
	pthread_condattr_t ca;

	if (!(timeout > 0)) {
		errno = EINVAL;
		return NULL;
	}
	fs = calloc(1, sizeof(*fs));
	if (!fs)
		return NULL;
	if (hook && strchr(hook, ':')) {
		fs->hang_path = strdup(hook);
		if (!fs->hang_path) {
			free(fs);
			return NULL;
		}
		fs->hang_flag = strchr(fs->hang_path, ':');
		*fs->hang_flag++ = '\0';
	}
	pthread_mutex_init(&fs->mu, NULL);
	pthread_cond_init(&fs->work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->done, &ca);
	pthread_condattr_destroy(&ca);
	fs->refs = 1;
	fs->timeout = timeout;
	return fs;
}

static bool statfs_is_hung(const struct tally_statfs *fs, const char *path)
{
	for (const struct statfs_worker *w = fs->hung; w; w = w->next)
		if (!strcmp(w->path, path))
			return true;
	return false;
}

int tally_statfs_run(struct tally_statfs *fs, struct tally_statfs_req *reqs,
		     size_t n)
{
	size_t target = 0;
	int ret = 0;

	pthread_mutex_lock(&fs->mu);
	for (size_t i = 0; i < n; i++) {
		reqs[i].err = statfs_is_hung(fs, reqs[i].path) ? EBUSY
							       : EINPROGRESS;
		target += reqs[i].err == EINPROGRESS;
	}
	fs->reqs = reqs;
	fs->n = n;
	fs->next = 0;
	fs->ndone = 0;
	while (fs->ndone < target) {
		size_t before = fs->ndone;
		struct timespec dl;

		if (!fs->cur && statfs_start(fs) < 0) {
			for (size_t i = 0; i < n; i++)
				if (reqs[i].err == EINPROGRESS)
					reqs[i].err = EAGAIN;
			errno = EAGAIN;
			ret = -1;
			break;
		}
		pthread_cond_broadcast(&fs->work);
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += (time_t)fs->timeout;
		dl.tv_nsec += (long)((fs->timeout - (double)(time_t)fs->timeout) *
				     1e9);
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (fs->ndone == before && fs->ndone < target &&
		       pthread_cond_timedwait(&fs->done, &fs->mu, &dl) !=
			       ETIMEDOUT)
			;
		if (fs->ndone != before || !fs->cur || !fs->cur->busy)
			continue;
		/* no progress for the timeout: abandon the call */
		reqs[fs->cur->idx].err = ETIMEDOUT;
		fs->ndone++;
		fs->cur->abandoned = true;
		fs->cur->next = fs->hung;
		fs->hung = fs->cur;
		fs->cur = NULL;
	}
	fs->reqs = NULL;
	fs->n = fs->next = 0;
	pthread_mutex_unlock(&fs->mu);
	return ret;
}

size_t tally_statfs_hung(struct tally_statfs *fs)
{
	size_t n = 0;

	pthread_mutex_lock(&fs->mu);
	for (const struct statfs_worker *w = fs->hung; w; w = w->next)
		n++;
	pthread_mutex_unlock(&fs->mu);
	return n;
}

void tally_statfs_free(struct tally_statfs *fs)
{
	if (!fs)
		return;
	pthread_mutex_lock(&fs->mu);
	fs->closed = true;
	pthread_cond_broadcast(&fs->work);
	statfs_unref_unlock(fs);
}

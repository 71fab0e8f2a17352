/* SPDX-License-Identifier: MIT */
/*
 * tally/statfs.h - statvfs(3) of many mount points off the loop thread,
 * with a timeout
 *
 * statvfs() on a hard NFS or Lustre mount whose server is gone blocks in
 * the kernel, uninterruptibly, for as long as the server stays away. The
 * calls therefore run on a helper thread owned by the core (its code
 * stays mapped when a plugin is unloaded); the caller waits at most the
 * timeout for each call to make progress. A call that does not answer in
 * time is reported as ETIMEDOUT and abandoned to its thread, which exits
 * when the call returns; a fresh thread takes over the remaining paths.
 * Until the abandoned call returns, its path is answered EBUSY at once,
 * so a hung mount costs one timeout, not one per tick.
 *
 * Test hook: with TALLY_TEST_STATFS_HANG="PATH:FLAGFILE" in the
 * environment when the pool is made, statvfs of exactly PATH first waits
 * while FLAGFILE exists (polled every 10 ms), as a hung mount would.
 */
#ifndef TALLY_STATFS_H
#define TALLY_STATFS_H

#include <stddef.h>
#include <sys/statvfs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_statfs;

/**
 * struct tally_statfs_req - one statvfs(3) call
 * @path: in: the path, caller-owned, unchanged during tally_statfs_run()
 *        (the helper thread copies it before a call that may outlive it)
 * @err:  out: 0, the errno of statvfs(3), ETIMEDOUT (did not answer
 *        within the timeout; the call goes on in the background), EBUSY
 *        (an earlier call on this path is still hung), or ENOMEM
 * @st:   out: the result when @err is 0
 */
struct tally_statfs_req {
	const char *path;
	int err;
	struct statvfs st;
};

/**
 * tally_statfs_new() - a pool of (at most one working) helper thread
 * @timeout: seconds each call may take before it is abandoned (> 0)
 *
 * Return: the pool, or NULL with errno = ENOMEM or EINVAL. The thread is
 * started by the first tally_statfs_run().
 */
struct tally_statfs *tally_statfs_new(double timeout);

/**
 * tally_statfs_run() - statvfs(3) each of @reqs, in order
 * @fs:   the pool; one caller at a time (not thread-safe)
 * @reqs: the calls; @err and @st filled in for each
 * @n:    their number
 *
 * Blocks the caller at most @timeout seconds per path that hangs for the
 * first time (paths already known hung cost nothing), plus the time the
 * others take. One thread wake-up per run, not per path.
 * Return: 0 (each request's @err says how it went), or -1 with errno =
 * EAGAIN when no helper thread could be started (every @err is set too).
 */
int tally_statfs_run(struct tally_statfs *fs, struct tally_statfs_req *reqs,
		     size_t n);

/**
 * tally_statfs_hung() - number of calls abandoned and still hung
 */
size_t tally_statfs_hung(struct tally_statfs *fs);

/**
 * tally_statfs_free() - release the pool
 *
 * Never waits for a hung call: its thread keeps what it needs and frees it
 * when the call returns. NULL is allowed.
 */
void tally_statfs_free(struct tally_statfs *fs);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_STATFS_H */

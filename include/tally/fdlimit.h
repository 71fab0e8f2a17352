/* SPDX-License-Identifier: MIT */
/*
 * tally/fdlimit.h - file descriptors: never die of running out of them
 *
 * Listening sockets whose connections someone else accepts (libzmq's I/O
 * thread accepts a zmq_trace endpoint's senders) can take every descriptor
 * tallyd has: any local user may connect to the system collector's socket.
 * libzmq 4.3.4 then aborts the process (its ipc listener asserts that
 * accept() did not fail with EMFILE). So tallyd routes every accept(2) of
 * the process through the core, and for a listening socket registered
 * with tally_accept_limit() (register every one whose connections libzmq
 * accepts: its ipc listener aborts, its tcp listener copes):
 *
 *   - connections are closed at once, and counted, while fewer than the
 *     listener's reserve of descriptors would stay free: scrapes, outputs
 *     and the senders already connected keep working;
 *   - an accept that fails for want of descriptors (EMFILE, ENFILE) takes
 *     the pending connection with a descriptor kept spare for that, closes
 *     it, and fails with ECONNABORTED, which libzmq takes as "nothing to
 *     accept, carry on"; ENOBUFS and ENOMEM fail with ECONNABORTED too.
 *
 * Accepts on other listening sockets (the prometheus output's, which
 * handles EMFILE itself) are left as they are.
 *
 * Only tallyd routes accept through the core (it exports accept and
 * accept4); in other programs that link libtally the limits are recorded
 * but not applied.
 */
#ifndef TALLY_FDLIMIT_H
#define TALLY_FDLIMIT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Listeners tally_accept_limit() can hold at once. */
#define TALLY_ACCEPT_LIMITS 16

/**
 * tally_accept_limit() - keep @reserve descriptors free of @fd's peers
 * @fd:      a listening socket; its connections are accepted by any thread
 * @reserve: descriptors that must stay free for the rest of the process,
 *           or 0 for tally_fd_reserve()
 *
 * A connection accepted on @fd gets the lowest free descriptor number
 * (POSIX), so every descriptor below it is in use: when that number is
 * within @reserve of the soft RLIMIT_NOFILE, the connection is closed at
 * once, counted, and the accept fails with ECONNABORTED. Registering @fd
 * again replaces its reserve and keeps its count.
 *
 * Return: 0, or -1 with errno = EINVAL (@fd negative) or ENOSPC (already
 * TALLY_ACCEPT_LIMITS listeners).
 * Thread-safety: any thread; remove the limit with tally_accept_unlimit()
 * before the descriptor is closed.
 */
int tally_accept_limit(int fd, unsigned reserve);

/**
 * tally_accept_unlimit() - forget @fd's limit (no-op if it has none)
 * Return: the connections refused on @fd since it was registered.
 */
uint64_t tally_accept_unlimit(int fd);

/**
 * tally_accept_refused() - connections refused on @fd since registered
 * Return: the count (monotonic), 0 for an unregistered @fd.
 * Thread-safety: any thread; lock-free.
 */
uint64_t tally_accept_refused(int fd);

/**
 * tally_fd_reserve() - the default reserve: an eighth of the soft
 * RLIMIT_NOFILE, at least 16 and at most 1024 descriptors
 */
unsigned tally_fd_reserve(void);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_FDLIMIT_H */

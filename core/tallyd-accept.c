/* SPDX-License-Identifier: MIT */
/*
 * core/tallyd-accept.c - every accept of tallyd goes through the core
 *
 * libzmq's and libevent's accept calls resolve to these: the executable
 * comes first in the dynamic linker's lookup order, before libc and before
 * a sanitizer's runtime, and exports them (-Wl,--export-dynamic-symbol in
 * core/local.mk). Why: tally/fdlimit.h.
 */
#include "config.h"

#include <sys/socket.h>

#include "core-internal.h"

int accept(int fd, __SOCKADDR_ARG sa, socklen_t *restrict len)
{
	return tally_accept_guarded(fd, sa.__sockaddr__, len, 0);
}

int accept4(int fd, __SOCKADDR_ARG sa, socklen_t *restrict len, int flags)
{
	return tally_accept_guarded(fd, sa.__sockaddr__, len, flags);
}

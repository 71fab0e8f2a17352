/* SPDX-License-Identifier: MIT */
/*
 * t/unit/procfs-alloc.h - count heap allocations, for the "no allocation
 * per tick in steady state" tests of the procfs and netdev inputs
 *
 * Defines malloc, calloc, realloc and the aligned allocators in the test
 * program, which the dynamic linker then uses for every library too
 * (libtally, libc's own callers), each forwarding to glibc's __libc_*
 * implementation after counting. free() is left to glibc. Include it once
 * per test program.
 *
 * Under AddressSanitizer (or ThreadSanitizer) the sanitizer owns malloc:
 * counting is then unavailable and the tests that need it skip.
 */
#ifndef PROCFS_ALLOC_H
#define PROCFS_ALLOC_H

#include <errno.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROCFS_ALLOC_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROCFS_ALLOC_SANITIZED 1
#endif

#ifdef PROCFS_ALLOC_SANITIZED
static int alloc_count_available(void)
{
	return 0;
}

static long alloc_count(void)
{
	return 0;
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static long alloc_n;

static int alloc_count_available(void)
{
	return 1;
}

/* Allocations so far, by any thread. */
static long alloc_count(void)
{
	return __atomic_load_n(&alloc_n, __ATOMIC_RELAXED);
}

#define ALLOC_COUNT_ONE() __atomic_add_fetch(&alloc_n, 1, __ATOMIC_RELAXED)

void *malloc(size_t n)
{
	ALLOC_COUNT_ONE();
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	ALLOC_COUNT_ONE();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	ALLOC_COUNT_ONE();
	return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	ALLOC_COUNT_ONE();
	return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	ALLOC_COUNT_ONE();
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
#endif

#endif /* PROCFS_ALLOC_H */

/* SPDX-License-Identifier: MIT */
/*
 * t/unit/procfs-util.h - helpers of the procfs and netdev unit tests:
 * trees of files written in a temporary directory, lookups of records in a
 * batch, and heap allocation counting. Include once per test program,
 * after tap.h and tally/plugin.h (the plugin's .c).
 *
 * Allocation counting, for the "no allocation per tick in steady state"
 * tests: defines malloc, calloc, realloc and the aligned allocators in the test
 * program, which the dynamic linker then uses for every library too
 * (libtally, libc's own callers), each forwarding to glibc's __libc_*
 * implementation after counting. free() is left to glibc. Include it once
 * per test program.
 *
 * Under AddressSanitizer (or ThreadSanitizer) the sanitizer owns malloc:
 * counting is then unavailable and the tests that need it skip.
 */
#ifndef PROCFS_UTIL_H
#define PROCFS_UTIL_H

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The test's tree; main() makes it with mkdtemp(). */
static char tmpdir[] = "/tmp/tally-unit-XXXXXX";

/*
 * put() - write a file below tmpdir, creating its directories. The file is
 * rewritten in place (same inode), as the kernel's files change under a
 * reader that keeps them open.
 */
static __attribute__((unused)) void put(const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static __attribute__((unused)) void put(const char *rel, const char *fmt, ...)
{
	char path[512], *slash;
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	for (slash = strchr(path + strlen(tmpdir) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	if (!f)
		bail_out("cannot write %s: %s", path, strerror(errno));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* rmtree() - remove a file or directory below tmpdir ("" for all of it) */
static __attribute__((unused)) void rmtree(const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", tmpdir, rel);
	if (system(cmd) != 0)
		bail_out("%s failed", cmd);
}

/*
 * find() - the first metric record named @name whose labels include
 * @k1=@v1 and @k2=@v2 (a NULL key matches anything), or NULL
 */
static const struct tally_record *find(struct tally_batch *b, const char *name,
				       const char *k1, const char *v1,
				       const char *k2, const char *v2)
{
	for (size_t i = 0; i < tally_batch_count(b); i++) {
		const struct tally_record *r = tally_batch_at(b, i);
		const struct tally_metric *m = &r->metric;
		const char *g;

		if (r->kind != TALLY_REC_METRIC || strcmp(m->name, name) != 0)
			continue;
		if (k1 && (!(g = tally_labels_get(m->labels, k1)) ||
			   strcmp(g, v1) != 0))
			continue;
		if (k2 && (!(g = tally_labels_get(m->labels, k2)) ||
			   strcmp(g, v2) != 0))
			continue;
		return r;
	}
	return NULL;
}

/* val() - the value of find()'s record, NAN when there is none */
static __attribute__((unused)) double val(struct tally_batch *b,
					  const char *name, const char *k1,
					  const char *v1, const char *k2,
					  const char *v2)
{
	const struct tally_record *r = find(b, name, k1, v1, k2, v2);

	return r ? r->metric.value : NAN;
}

/* count() - the number of records named @name */
static __attribute__((unused)) size_t count(struct tally_batch *b,
					    const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < tally_batch_count(b); i++)
		if (strcmp(tally_batch_at(b, i)->metric.name, name) == 0)
			n++;
	return n;
}

/*
 * Size of one arena chunk of a batch (ARENA_CHUNK in core/record.c). The
 * steady-state tests emit batches whose names span several chunks, as a
 * node with many CPUs and interfaces does: a recycled batch must keep all
 * of them, not only the first, for a tick to allocate nothing.
 */
#define ARENA_CHUNK_BYTES 4096

/*
 * names_bytes() - arena bytes the names and help texts of @b's metric
 * records take at least (each string is copied into the batch's arena,
 * rounded up to 16 bytes as tally_batch_alloc() does)
 */
static __attribute__((unused)) size_t names_bytes(struct tally_batch *b)
{
	size_t n = 0;

	for (size_t i = 0; i < tally_batch_count(b); i++) {
		const struct tally_metric *m = &tally_batch_at(b, i)->metric;

		n += (strlen(m->name) + 1 + 15) & ~(size_t)15;
		if (m->help)
			n += (strlen(m->help) + 1 + 15) & ~(size_t)15;
	}
	return n;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PROCFS_ALLOC_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PROCFS_ALLOC_SANITIZED 1
#endif

/* Allocations so far, by any thread: counted by the hooks below. */
static long alloc_n;

#define ALLOC_COUNT_ONE() __atomic_add_fetch(&alloc_n, 1, __ATOMIC_RELAXED)

static long alloc_count(void)
{
	return __atomic_load_n(&alloc_n, __ATOMIC_RELAXED);
}

#ifdef PROCFS_ALLOC_SANITIZED
/*
 * The sanitizer owns malloc: count through its allocation hook (declared
 * here, as GCC ships no <sanitizer/allocator_interface.h>).
 */
int __sanitizer_install_malloc_and_free_hooks(
	void (*malloc_hook)(const volatile void *, size_t),
	void (*free_hook)(const volatile void *));

static void alloc_hook(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	ALLOC_COUNT_ONE();
}

static void free_hook(const volatile void *p)
{
	(void)p;
}

static int alloc_count_available(void)
{
	static int installed;

	if (!installed)
		installed = __sanitizer_install_malloc_and_free_hooks(
			alloc_hook, free_hook);
	return installed;
}
#else
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static int alloc_count_available(void)
{
	return 1;
}

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

#endif /* PROCFS_UTIL_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/page.c - rendered pages shared by the replies
 * that send them (see page.h)
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "page.h"

#define NS_PER_MS 1000000LL

struct prom_page {
	struct prom_page *next, **pprev; /* in owner->all, while owned */
	struct prom_pages *owner;	 /* NULL once prom_pages_free() ran */
	struct evbuffer *body;		 /* never changed once rendered */
	size_t len;
	size_t refs; /* pieces replies refer to, plus one while latest */
	uint64_t gen;
	int64_t at; /* CLOCK_MONOTONIC ns of the render */
};

struct prom_pages {
	struct prom_page *latest[PROM_PAGE_VARIANTS];
	size_t last_len[PROM_PAGE_VARIANTS]; /* kept when latest is trimmed */
	struct prom_page *all;		     /* every page alive */
	size_t bytes, n;
};

struct prom_pages *prom_pages_new(void)
{
	struct prom_pages *ps = calloc(1, sizeof(*ps));

	if (!ps)
		errno = ENOMEM;
	return ps;
}

static void page_unref(struct prom_page *pg)
{
	if (--pg->refs)
		return;
	if (pg->owner) {
		*pg->pprev = pg->next;
		if (pg->next)
			pg->next->pprev = pg->pprev;
		pg->owner->bytes -= pg->len;
		pg->owner->n--;
	}
	evbuffer_free(pg->body);
	free(pg);
}

/* evbuffer_add_reference()'s cleanup: a reply is done with one piece. */
static void page_piece_done(const void *data, size_t len, void *arg)
{
	page_unref(arg);
}

/* Stop serving the latest page of @variant; freed once no reply has it. */
static void pages_forget(struct prom_pages *ps, unsigned variant)
{
	struct prom_page *pg = ps->latest[variant];

	ps->latest[variant] = NULL;
	if (pg)
		page_unref(pg);
}

struct prom_page *prom_pages_get(struct prom_pages *ps, unsigned variant,
				 uint64_t gen, int64_t now_ns)
{
	struct prom_page *pg = ps->latest[variant % PROM_PAGE_VARIANTS];

	if (pg && pg->gen == gen &&
	    now_ns - pg->at < PROM_PAGE_SHARE_MS * NS_PER_MS)
		return pg;
	return NULL;
}

struct prom_page *prom_pages_add(struct prom_pages *ps, unsigned variant,
				 uint64_t gen, int64_t now_ns,
				 struct evbuffer *body)
{
	struct prom_page *pg = calloc(1, sizeof(*pg));

	variant %= PROM_PAGE_VARIANTS;
	if (!pg) {
		evbuffer_free(body);
		errno = ENOMEM;
		return NULL;
	}
	pg->owner = ps;
	pg->body = body;
	pg->len = evbuffer_get_length(body);
	pg->refs = 1;
	pg->gen = gen;
	pg->at = now_ns;
	pg->next = ps->all;
	if (pg->next)
		pg->next->pprev = &pg->next;
	pg->pprev = &ps->all;
	ps->all = pg;
	ps->bytes += pg->len;
	ps->n++;
	pages_forget(ps, variant);
	ps->latest[variant] = pg;
	ps->last_len[variant] = pg->len;
	return pg;
}

size_t prom_pages_last_size(const struct prom_pages *ps, unsigned variant)
{
	return ps->last_len[variant % PROM_PAGE_VARIANTS];
}

int prom_page_attach(struct prom_page *pg, struct evbuffer *out)
{
	int n = evbuffer_peek(pg->body, -1, NULL, NULL, 0);
	struct evbuffer_iovec *v;

	if (n <= 0)
		return 0;
	v = malloc((size_t)n * sizeof(*v));
	if (!v)
		goto out_nomem;
	n = evbuffer_peek(pg->body, -1, NULL, v, n);
	for (int i = 0; i < n; i++) {
		if (!v[i].iov_len)
			continue;
		if (evbuffer_add_reference(out, v[i].iov_base, v[i].iov_len,
					   page_piece_done, pg) < 0)
			goto out_free;
		pg->refs++;
	}
	free(v);
	return 0;

out_free:
	free(v);
out_nomem:
	errno = ENOMEM;
	return -1;
}

size_t prom_page_size(const struct prom_page *pg)
{
	return pg->len;
}

size_t prom_pages_bytes(const struct prom_pages *ps)
{
	return ps->bytes;
}

size_t prom_pages_count(const struct prom_pages *ps)
{
	return ps->n;
}

void prom_pages_trim(struct prom_pages *ps, int64_t now_ns)
{
	for (unsigned i = 0; i < PROM_PAGE_VARIANTS; i++)
		if (ps->latest[i] && now_ns - ps->latest[i]->at >=
					     PROM_PAGE_SHARE_MS * NS_PER_MS)
			pages_forget(ps, i);
}

void prom_pages_free(struct prom_pages *ps)
{
	if (!ps)
		return;
	for (unsigned i = 0; i < PROM_PAGE_VARIANTS; i++)
		pages_forget(ps, i);
	/* the rest are referred to by replies: theirs to free */
	while (ps->all) {
		struct prom_page *pg = ps->all;

		ps->all = pg->next;
		pg->owner = NULL;
		pg->next = NULL;
		pg->pprev = NULL;
	}
	free(ps);
}

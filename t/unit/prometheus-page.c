/* SPDX-License-Identifier: MIT */
/*
 * t/unit/prometheus-page.c - pages shared by the replies that send them:
 * sharing rules, references, the byte count, and freeing with the last
 * reference (also after the set itself is gone)
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "../../plugins/output/prometheus/page.h"
#include "tap.h"

#define MS 1000000LL

/* A body of @n bytes in several pieces, as a render makes it. */
static struct evbuffer *body(size_t n, char c)
{
	struct evbuffer *b = evbuffer_new();
	char chunk[1000];

	memset(chunk, c, sizeof(chunk));
	while (n) {
		size_t k = n < sizeof(chunk) ? n : sizeof(chunk);

		/* evbuffer_add_reference pieces are never merged: several
		 * chains for certain */
		evbuffer_add(b, chunk, k);
		n -= k;
	}
	return b;
}

static char *text(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	evbuffer_copyout(b, s, n);
	s[n] = '\0';
	return s;
}

int main(void)
{
	struct prom_pages *ps = prom_pages_new();
	struct prom_page *a, *b;
	struct evbuffer *r1 = evbuffer_new(), *r2 = evbuffer_new();
	char *t;

	plan(NO_PLAN);
	ok(ps && !prom_pages_get(ps, 0, 1, 0), "no page at first");
	a = prom_pages_add(ps, 0, 7, 100 * MS, body(300000, 'a'));
	ok(a != NULL, "page added");
	cmp_ok(prom_pages_bytes(ps), "==", 300000, "its bytes counted");
	ok(prom_pages_get(ps, 0, 7, 100 * MS + 999 * MS) == a,
	   "shared within PROM_PAGE_SHARE_MS");
	ok(!prom_pages_get(ps, 0, 7, 100 * MS + PROM_PAGE_SHARE_MS * MS),
	   "not after");
	ok(!prom_pages_get(ps, 0, 8, 101 * MS), "not for another generation");
	ok(!prom_pages_get(ps, 1, 7, 101 * MS), "not for another variant");
	cmp_ok(prom_pages_last_size(ps, 0), "==", 300000, "last size");

	/* two replies refer to it: no copy, one page */
	ok(prom_page_attach(a, r1) == 0 && prom_page_attach(a, r2) == 0,
	   "attached twice");
	cmp_ok(evbuffer_get_length(r1), "==", 300000, "reply 1 has it all");
	t = text(r2);
	ok(strlen(t) == 300000 && t[0] == 'a' && t[299999] == 'a',
	   "reply 2 reads the page");
	free(t);
	cmp_ok(prom_pages_bytes(ps), "==", 300000, "still one page's bytes");

	/* a new render replaces it; the replies keep the old one alive */
	b = prom_pages_add(ps, 0, 8, 200 * MS, body(1000, 'b'));
	ok(b && prom_pages_get(ps, 0, 8, 200 * MS) == b, "new latest");
	cmp_ok(prom_pages_count(ps), "==", 2, "old page alive for its replies");
	cmp_ok(prom_pages_bytes(ps), "==", 301000, "both counted");
	evbuffer_drain(r1, 100000);
	cmp_ok(prom_pages_bytes(ps), "==", 301000,
	       "a reply half sent still holds it");
	evbuffer_drain(r1, evbuffer_get_length(r1));
	cmp_ok(prom_pages_count(ps), "==", 2, "one reply left holds it");
	evbuffer_free(r2);
	cmp_ok(prom_pages_count(ps), "==", 1, "last reply gone: page freed");
	cmp_ok(prom_pages_bytes(ps), "==", 1000, "its bytes no longer counted");

	/* trim forgets stale latest pages */
	prom_pages_trim(ps, 200 * MS + 500 * MS);
	cmp_ok(prom_pages_count(ps), "==", 1, "fresh page kept");
	prom_pages_trim(ps, 200 * MS + PROM_PAGE_SHARE_MS * MS);
	cmp_ok(prom_pages_count(ps), "==", 0, "stale page freed");
	cmp_ok(prom_pages_bytes(ps), "==", 0, "nothing counted");
	cmp_ok(prom_pages_last_size(ps, 0), "==", 1000,
	       "the last size is remembered");

	/* a reply may outlive the set (evhttp frees buffers later) */
	a = prom_pages_add(ps, 2, 9, 300 * MS, body(5000, 'c'));
	ok(prom_page_attach(a, r1) == 0, "attached");
	prom_pages_free(ps);
	t = text(r1);
	ok(strlen(t) == 5000 && t[4999] == 'c', "still readable");
	free(t);
	evbuffer_free(r1); /* frees the page: no leak under ASan */
	return done_testing();
}

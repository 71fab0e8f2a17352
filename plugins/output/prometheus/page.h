/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/page.h - rendered pages, shared by the replies
 * that send them
 *
 * A scrape used to render the exposition into its own reply buffer, which
 * lived until the client had read it all: 60 clients reading a 16 MB page
 * at a byte a second held 60 copies (RSS from 77 MB to 1 GB). Now a page
 * is rendered once into a prom_page, and every reply refers to its bytes
 * (evbuffer_add_reference(), no copy); a page is freed when the last reply
 * referring to it is done or dropped. Scrapes that ask for the same
 * variant (format, compression) of an unchanged store within
 * PROM_PAGE_SHARE_MS share the page, unless a span is open (its region's
 * seconds are counted up to each scrape). The bytes of all pages alive are
 * counted, so that the caller can bound them (max_reply_bytes).
 *
 * Private to the prometheus output. Loop thread only, not thread-safe;
 * the reference callbacks run where libevent frees reply buffers, on the
 * loop thread too.
 */
#ifndef PROM_PAGE_H
#define PROM_PAGE_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct prom_pages;
struct prom_page;

/* How long a rendered page is served again to scrapes of the same variant
 * while the store is unchanged: values that depend on the scrape time (a
 * span still open) are at most this old. */
#define PROM_PAGE_SHARE_MS 1000

/* Variants a page exists in: format (enum prom_format) x gzip. */
#define PROM_PAGE_VARIANTS 4

/** prom_pages_new() - no pages yet. Return: NULL with errno = ENOMEM. */
struct prom_pages *prom_pages_new(void);

/**
 * prom_pages_get() - the page to serve, if one can be shared
 * @variant: 0 .. PROM_PAGE_VARIANTS - 1
 * @gen:     the store's generation (prom_store_generation())
 * @now_ns:  CLOCK_MONOTONIC ns
 * Return: the latest page of @variant if it was rendered from generation
 * @gen less than PROM_PAGE_SHARE_MS ago, else NULL. Valid until the next
 * call of a prom_pages_* function.
 */
struct prom_page *prom_pages_get(struct prom_pages *ps, unsigned variant,
				 uint64_t gen, int64_t now_ns);

/**
 * prom_pages_add() - make @body the latest page of @variant
 * @body: the rendered bytes; taken over (freed with the page)
 * Return: the page (valid as for prom_pages_get()), or NULL with errno =
 * ENOMEM (@body is freed).
 */
struct prom_page *prom_pages_add(struct prom_pages *ps, unsigned variant,
				 uint64_t gen, int64_t now_ns,
				 struct evbuffer *body);

/**
 * prom_pages_last_size() - bytes of the page of @variant rendered last
 * (whether still kept or not), or 0 if none was
 */
size_t prom_pages_last_size(const struct prom_pages *ps, unsigned variant);

/**
 * prom_page_attach() - append a page's bytes to @out by reference
 * Each piece holds the page until @out no longer needs it (sent, drained
 * or freed).
 * Return: 0, or -1 with errno = ENOMEM (@out may hold part of the page:
 * drain it).
 */
int prom_page_attach(struct prom_page *pg, struct evbuffer *out);

/** prom_page_size() - bytes of a page */
size_t prom_page_size(const struct prom_page *pg);

/**
 * prom_pages_bytes() - bytes of every page alive: the latest of each
 * variant and those replies still refer to
 */
size_t prom_pages_bytes(const struct prom_pages *ps);

/** prom_pages_count() - pages alive */
size_t prom_pages_count(const struct prom_pages *ps);

/**
 * prom_pages_trim() - forget the latest pages older than
 * PROM_PAGE_SHARE_MS (they are freed once no reply refers to them)
 */
void prom_pages_trim(struct prom_pages *ps, int64_t now_ns);

/**
 * prom_pages_free() - forget every page. Pages replies still refer to are
 * freed by their last reference, which may come later (when the event
 * base frees the buffers of connections evhttp closed). NULL is a no-op.
 */
void prom_pages_free(struct prom_pages *ps);

#endif /* PROM_PAGE_H */

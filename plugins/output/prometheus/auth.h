/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/auth.h - HTTP basic auth with bcrypt hashes
 *
 * Users and their bcrypt hashes come from the basic_auth_users option, in
 * the form node_exporter's web-config.yml has them (user -> "$2y$..."), so
 * they can be copied over. bcrypt is slow on purpose (tens of ms at cost
 * 10), so:
 *   - verification runs on a thread of its own, never on the loop: the
 *     request waits (prom_auth_request() says PENDING) and is answered
 *     when the verdict comes back; a connection closed meanwhile is
 *     forgotten;
 *   - a verified user and password are cached (a salted SHA-256 of them,
 *     never the password) for PROM_AUTH_CACHE_S: a scraper's requests after
 *     its first cost one hash, not one bcrypt;
 *   - refused credentials are cached too, for PROM_AUTH_REFUSED_S: a
 *     scraper configured with a wrong password gets its 401 at once, at
 *     no cost, and without backing its address off (below), which may be
 *     a right scraper's too (one Prometheus, two jobs);
 *   - a failed verification puts its client address in a backoff (1 s,
 *     doubling up to PROM_AUTH_BACKOFF_MAX_S, reset by a success) during
 *     which its uncached attempts are refused at once (429) without
 *     running bcrypt, and at most PROM_AUTH_MAX_PENDING verifications wait
 *     at a time: wrong passwords, from one address or many, cannot keep
 *     the thread busy for the scrapers whose credentials are cached;
 *   - an unknown user is verified against a dummy hash, so that the time
 *     of a 401 does not tell which users exist.
 * No password or hash is ever logged.
 *
 * Built without OpenSSL and libcrypt (HAVE_TLS undefined), prom_auth_new()
 * fails with ENOTSUP.
 * Private to the prometheus output. Loop thread only, except the worker.
 */
#ifndef PROM_AUTH_H
#define PROM_AUTH_H

struct event_base;
struct evhttp_request;
struct tally_instance;
struct tally_labels;
struct prom_auth;

/* Seconds a verified user and password stay cached. */
#define PROM_AUTH_CACHE_S 600
/* Seconds refused credentials stay cached. */
#define PROM_AUTH_REFUSED_S 60
/* Entries the cache holds; the one expiring first makes room. */
#define PROM_AUTH_CACHE_MAX 256
/* Longest backoff of an address after failures, seconds. */
#define PROM_AUTH_BACKOFF_MAX_S 60
/* Longest password, bytes: bcrypt reads no more; a longer one gets 401. */
#define PROM_AUTH_MAX_PASSWORD 72
/* Verifications waiting for the thread at most; beyond: 429. */
#define PROM_AUTH_MAX_PENDING 16
/* Addresses whose failures are remembered; the least recent goes. */
#define PROM_AUTH_ADDRS_MAX 256

/** enum prom_auth_verdict - what to do with a request */
enum prom_auth_verdict {
	PROM_AUTH_OK,	   /* serve it */
	PROM_AUTH_DENIED,  /* 401 with WWW-Authenticate */
	PROM_AUTH_LIMITED, /* 429: in backoff, or too many waiting */
	PROM_AUTH_PENDING, /* the verdict comes later, through @done */
};

/**
 * typedef prom_auth_done - the verdict of a PENDING request, on the loop
 * thread: PROM_AUTH_OK or PROM_AUTH_DENIED. Not called when the request's
 * connection closed first.
 */
typedef void (*prom_auth_done)(struct evhttp_request *req,
			       enum prom_auth_verdict v, void *arg);

/**
 * prom_auth_check_users() - whether every hash of @users is bcrypt
 * ($2a$, $2b$ or $2y$, cost 4 to 31, 60 characters), logging each bad one
 * by user name. No side effects (--check-config).
 * Return: 0, or -1 with errno = EINVAL (ENOTSUP: no basic auth in this
 * build, logged).
 */
int prom_auth_check_users(struct tally_instance *inst,
			  const struct tally_labels *users);

/**
 * prom_auth_new() - basic auth for the users of @users (user -> hash)
 * @base: the loop, where verdicts are delivered
 * @inst: for counters (events "unauthorized", "auth_rate_limited",
 *        "auth_bcrypt") and logs
 * Starts the verification thread.
 * Return: the state, or NULL with errno (ENOTSUP, ENOMEM, EAGAIN).
 */
struct prom_auth *prom_auth_new(struct event_base *base,
				struct tally_instance *inst,
				const struct tally_labels *users);

/**
 * prom_auth_request() - judge @req's Authorization header
 * @done, @arg: called with the verdict when PROM_AUTH_PENDING is returned
 * Return: the verdict now, or PROM_AUTH_PENDING.
 */
enum prom_auth_verdict prom_auth_request(struct prom_auth *a,
					 struct evhttp_request *req,
					 prom_auth_done done, void *arg);

/**
 * prom_auth_free() - stop the thread (after the verification in progress)
 * and forget pending requests; call before evhttp_free(). NULL is a no-op.
 */
void prom_auth_free(struct prom_auth *a);

#endif /* PROM_AUTH_H */

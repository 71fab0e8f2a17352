/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/tls.h - HTTPS for the prometheus output
 *
 * One OpenSSL server context per output, made from a certificate (chain)
 * file and a private key file in PEM, TLS 1.2 at least. Each accepted
 * connection gets a libevent OpenSSL bufferevent (conn.c asks for it
 * through struct prom_conns_opts.new_bev), which evhttp then reads and
 * writes as it would a plain socket. prom_tls_reload() (the output's
 * reopen op, on SIGHUP) reads the files again into a new context: new
 * connections use it, connections open now keep the one they started
 * with (OpenSSL counts the references), and a reload that fails keeps the
 * old context and says why.
 *
 * Built without OpenSSL (configure: HAVE_TLS undefined), prom_tls_new()
 * fails with ENOTSUP and prom_tls_missing() says why.
 * Private to the prometheus output. Loop thread only.
 */
#ifndef PROM_TLS_H
#define PROM_TLS_H

#include <stdbool.h>

struct bufferevent;
struct event_base;
struct tally_instance;
struct prom_tls;

/**
 * prom_tls_missing() - why this build has no TLS
 * Return: NULL when it has, else a static sentence naming what configure
 * did not find.
 */
const char *prom_tls_missing(void);

/**
 * prom_tls_new() - a server context from @cert_file and @key_file
 * @inst: for the log lines saying what is wrong with the files
 * Return: the context, or NULL with errno (ENOTSUP: no TLS in this build;
 * EINVAL: a file missing, unreadable, not PEM, or the key not the
 * certificate's; ENOMEM), the reason logged.
 */
struct prom_tls *prom_tls_new(struct tally_instance *inst,
			      const char *cert_file, const char *key_file);

/**
 * prom_tls_reload() - read the files again (SIGHUP)
 * Return: 0 (new connections use the new files), or -1 with errno, the
 * reason logged, and the previous certificate still in use.
 */
int prom_tls_reload(struct prom_tls *t);

/**
 * prom_tls_bev() - a TLS bufferevent for a connection evhttp accepts
 * @base: the loop
 * @arg:  the struct prom_tls (a struct prom_conns_opts.new_bev callback)
 * The socket is set by evhttp afterwards; closed when the bufferevent is
 * freed. Return: the bufferevent, or NULL (evhttp then drops the
 * connection).
 */
struct bufferevent *prom_tls_bev(struct event_base *base, void *arg);

/** prom_tls_free() - release the context; NULL is a no-op */
void prom_tls_free(struct prom_tls *t);

#endif /* PROM_TLS_H */

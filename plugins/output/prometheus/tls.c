/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/tls.c - HTTPS for the prometheus output (see
 * tls.h)
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/log.h>

#include "tls.h"

#ifdef HAVE_TLS

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <time.h>

struct prom_tls {
	struct tally_instance *inst;
	char *cert_file;
	char *key_file;
	SSL_CTX *ctx;
	bool encrypted; /* the key asked for a pass phrase */
};

const char *prom_tls_missing(void)
{
	return NULL;
}

/* The last OpenSSL error of this thread, as text; the queue emptied. */
static const char *tls_error(char *buf, size_t size)
{
	unsigned long e = ERR_peek_last_error();

	if (!e)
		snprintf(buf, size, "%s", strerror(errno ? errno : EINVAL));
	else
		ERR_error_string_n(e, buf, size);
	ERR_clear_error();
	return buf;
}

/*
 * OpenSSL's pass phrase callback for an encrypted key: none. Without it
 * OpenSSL prompts on the terminal, and a tallyd started from one (or
 * reloaded while attached to one) waited there for ever.
 */
static int tls_no_passphrase(char *buf, int size, int rwflag, void *u)
{
	struct prom_tls *t = u;

	(void)buf;
	(void)size;
	(void)rwflag;
	t->encrypted = true;
	return 0;
}

/*
 * Warn about a certificate out of its validity dates: every client
 * refuses it (Prometheus: "x509: certificate has expired"), so a scrape
 * that worked before a reload fails after it. It is still served: the
 * operator may be replacing it, and a warning names the problem where a
 * refusal would take the endpoint down.
 */
static void tls_check_dates(struct prom_tls *t, const X509 *x)
{
	const ASN1_TIME *na, *nb;
	const char *what = NULL;
	char when[64] = "?";
	struct tm tm;

	if (!x)
		return;
	na = X509_get0_notAfter(x);
	nb = X509_get0_notBefore(x);
	if (na && X509_cmp_current_time(na) < 0) {
		what = "expired on";
		if (ASN1_TIME_to_tm(na, &tm) == 1)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC",
				 &tm);
	} else if (nb && X509_cmp_current_time(nb) > 0) {
		what = "is not valid before";
		if (ASN1_TIME_to_tm(nb, &tm) == 1)
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC",
				 &tm);
	}
	if (what)
		tally_log(t->inst, LOG_WARNING,
			  "tls_cert_file %s: the certificate %s %s: clients "
			  "will refuse it until it is replaced (SIGHUP "
			  "reloads it)",
			  t->cert_file, what, when);
}

/* A context from the files, or NULL (logged). */
static SSL_CTX *tls_ctx(struct prom_tls *t)
{
	char err[256];
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ctx) {
		tally_log(t->inst, LOG_ERR, "TLS: %s",
			  tls_error(err, sizeof(err)));
		errno = ENOMEM;
		return NULL;
	}
	/* what node_exporter's web config allows by default */
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
					 SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
		tally_log(t->inst, LOG_ERR,
			  "tls_cert_file %s: cannot use it: %s", t->cert_file,
			  tls_error(err, sizeof(err)));
		goto out_free;
	}
	SSL_CTX_set_default_passwd_cb(ctx, tls_no_passphrase);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, t);
	t->encrypted = false;
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) !=
	    1) {
		if (t->encrypted) {
			ERR_clear_error();
			tally_log(t->inst, LOG_ERR,
				  "tls_key_file %s is encrypted: tallyd cannot "
				  "ask for a pass phrase; keep the key "
				  "unencrypted, readable by tallyd's user "
				  "only",
				  t->key_file);
			goto out_free;
		}
		tally_log(t->inst, LOG_ERR,
			  "tls_key_file %s: cannot use it: %s", t->key_file,
			  tls_error(err, sizeof(err)));
		goto out_free;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		tally_log(t->inst, LOG_ERR,
			  "tls_key_file %s is not the key of tls_cert_file %s: "
			  "%s",
			  t->key_file, t->cert_file,
			  tls_error(err, sizeof(err)));
		goto out_free;
	}
	tls_check_dates(t, SSL_CTX_get0_certificate(ctx));
	return ctx;

out_free:
	SSL_CTX_free(ctx);
	errno = EINVAL;
	return NULL;
}

struct prom_tls *prom_tls_new(struct tally_instance *inst,
			      const char *cert_file, const char *key_file)
{
	struct prom_tls *t = calloc(1, sizeof(*t));

	if (!t)
		goto out_nomem;
	t->inst = inst;
	t->cert_file = strdup(cert_file);
	t->key_file = strdup(key_file);
	if (!t->cert_file || !t->key_file)
		goto out_nomem;
	t->ctx = tls_ctx(t);
	if (!t->ctx) {
		int e = errno;

		prom_tls_free(t);
		errno = e;
		return NULL;
	}
	return t;

out_nomem:
	prom_tls_free(t);
	errno = ENOMEM;
	return NULL;
}

int prom_tls_reload(struct prom_tls *t)
{
	SSL_CTX *ctx = tls_ctx(t);

	if (!ctx) {
		tally_log(t->inst, LOG_WARNING,
			  "TLS: keeping the certificate loaded before");
		return -1;
	}
	/* connections open now hold their own references to the old one */
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	tally_log(t->inst, LOG_INFO, "TLS: certificate %s and key %s reloaded",
		  t->cert_file, t->key_file);
	return 0;
}

struct bufferevent *prom_tls_bev(struct event_base *base, void *arg)
{
	struct prom_tls *t = arg;
	struct bufferevent *bev;
	SSL *ssl = SSL_new(t->ctx);

	if (!ssl) {
		ERR_clear_error();
		return NULL;
	}
	/* frees @ssl and closes the socket with itself */
	bev = bufferevent_openssl_socket_new(base, -1, ssl,
					     BUFFEREVENT_SSL_ACCEPTING,
					     BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	/* a client that closes without close_notify is no error for HTTP,
	 * whose replies have a Content-Length */
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void prom_tls_free(struct prom_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t->cert_file);
	free(t->key_file);
	free(t);
}

#else /* !HAVE_TLS */

const char *prom_tls_missing(void)
{
	return "this tallyd was built without TLS: " TLS_MISSING;
}

struct prom_tls *prom_tls_new(struct tally_instance *inst,
			      const char *cert_file, const char *key_file)
{
	tally_log(inst, LOG_ERR, "%s", prom_tls_missing());
	errno = ENOTSUP;
	return NULL;
}

int prom_tls_reload(struct prom_tls *t)
{
	errno = ENOTSUP;
	return -1;
}

struct bufferevent *prom_tls_bev(struct event_base *base, void *arg)
{
	return NULL;
}

void prom_tls_free(struct prom_tls *t)
{
}

#endif /* HAVE_TLS */

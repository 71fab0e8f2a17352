/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/auth.c - HTTP basic auth with bcrypt hashes
 * (see auth.h for what and why)
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tally/labels.h>
#include <tally/log.h>

#include "auth.h"

#ifdef HAVE_TLS

#include <arpa/inet.h>
#include <crypt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <stdio.h>

#include <tally/record.h>

#define NS_PER_S 1000000000LL

/* A longest Authorization header taken: user and password of 1 KiB. */
#define AUTH_MAX_HEADER 2048

struct auth_cache {
	unsigned char key[32]; /* SHA-256(salt, user, NUL, password) */
	int64_t expires;       /* monotonic ns; 0: free */
	bool ok;	       /* verified, or refused */
};

struct auth_addr {
	char host[INET6_ADDRSTRLEN];
	int64_t until;	 /* no uncached attempt before (monotonic ns) */
	int64_t backoff; /* the next failure's backoff, ns */
	int64_t used;	 /* last look, for eviction */
};

/* One verification: made on the loop, run by the worker, judged on the
 * loop again. */
struct auth_job {
	struct auth_job *next; /* worker queue */
	struct auth_job *pnext; /* pending list (loop) */
	struct prom_auth *a;
	struct event *ev;	/* activated by the worker */
	struct evhttp_request *req; /* NULL once its connection closed */
	struct evhttp_connection *evcon;
	prom_auth_done done;
	void *arg;
	unsigned char key[32];
	char host[INET6_ADDRSTRLEN];
	char hash[128];
	char *password; /* zeroed and freed after use */
	bool known;	/* the user exists */
	bool ok;	/* worker: verified */
};

struct prom_auth {
	struct tally_instance *inst;
	struct event_base *base;
	const struct tally_labels *users; /* core-owned, outlives us */
	unsigned char salt[16];
	/*
	 * What unknown users are verified against: a bcrypt setting with a
	 * random salt and the users' cost, made at start (no hash of anyone's
	 * password), so that their 401 takes as long as a known user's.
	 */
	char dummy[64];
	struct auth_cache cache[PROM_AUTH_CACHE_MAX];
	struct auth_addr addrs[PROM_AUTH_ADDRS_MAX];
	struct auth_job *pending; /* loop: waiting for a verdict */
	size_t npending;
	/* worker */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct auth_job *queue, **qtail; /* under lock */
	bool stop;			 /* under lock */
};

/*
 * Why @h is not a bcrypt hash as htpasswd -B or node_exporter's tools make
 * them, in @why (@size bytes); true when it is one.
 */
static bool bcrypt_form(const char *h, char *why, size_t size)
{
	size_t n = strlen(h);

	if (n < 7 || h[0] != '$' || h[1] != '2' ||
	    (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$') {
		snprintf(why, size,
			 "it does not start with $2y$, $2b$ or $2a$");
		return false;
	}
	if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' ||
	    h[6] != '$') {
		snprintf(why, size,
			 "its cost, after $2%c$, is not two digits "
			 "($2%c$10$...)",
			 h[2], h[2]);
		return false;
	}
	if ((h[4] - '0') * 10 + (h[5] - '0') < 4 ||
	    (h[4] - '0') * 10 + (h[5] - '0') > 31) {
		snprintf(why, size,
			 "its cost %c%c is outside bcrypt's 04 to 31", h[4],
			 h[5]);
		return false;
	}
	if (n != 60) {
		snprintf(why, size,
			 "it has %zu characters, where bcrypt hashes have 60",
			 n);
		return false;
	}
	if (crypt_checksalt(h) != CRYPT_SALT_OK) {
		snprintf(why, size,
			 "its salt or hash is not bcrypt's base64 "
			 "([./A-Za-z0-9])");
		return false;
	}
	return true;
}

int prom_auth_check_users(struct tally_instance *inst,
			  const struct tally_labels *users)
{
	int rc = 0;

	for (size_t i = 0; i < tally_labels_count(users); i++) {
		const struct tally_label *l = tally_labels_at(users, i);

		char why[96];

		if (!bcrypt_form(l->value, why, sizeof(why))) {
			tally_log(inst, LOG_ERR,
				  "basic_auth_users: the hash of user %s is "
				  "not a bcrypt hash (\"$2y$10$...\", 60 "
				  "characters, as htpasswd -nbB makes): %s",
				  l->key, why);
			rc = -1;
		}
	}
	if (rc < 0)
		errno = EINVAL;
	return rc;
}

static void *auth_worker(void *arg)
{
	struct prom_auth *a = arg;
	struct crypt_data *cd = calloc(1, sizeof(*cd));

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct auth_job *j;
		const char *out;

		while (!a->queue && !a->stop)
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->stop)
			break;
		j = a->queue;
		a->queue = j->next;
		if (!a->queue)
			a->qtail = &a->queue;
		pthread_mutex_unlock(&a->lock);

		out = cd ? crypt_rn(j->password, j->hash, cd, sizeof(*cd))
			 : NULL;
		j->ok = j->known && out && strlen(out) == strlen(j->hash) &&
			CRYPTO_memcmp(out, j->hash, strlen(j->hash)) == 0;
		if (cd)
			OPENSSL_cleanse(cd, sizeof(*cd));
		OPENSSL_cleanse(j->password, strlen(j->password));
		/* back to the loop (libevent is thread-safe here: evthread) */
		event_active(j->ev, EV_READ, 1);

		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	free(cd);
	return NULL;
}

struct prom_auth *prom_auth_new(struct event_base *base,
				struct tally_instance *inst,
				const struct tally_labels *users)
{
	struct prom_auth *a = calloc(1, sizeof(*a));
	unsigned char rnd[16];
	int cost = 10;

	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	a->inst = inst;
	a->base = base;
	a->users = users;
	a->qtail = &a->queue;
	if (tally_labels_count(users)) {
		const char *h = tally_labels_at(users, 0)->value;

		cost = (h[4] - '0') * 10 + (h[5] - '0');
	}
	if (RAND_bytes(a->salt, sizeof(a->salt)) != 1 ||
	    RAND_bytes(rnd, sizeof(rnd)) != 1 ||
	    !crypt_gensalt_rn("$2y$", (unsigned long)cost, (const char *)rnd,
			      sizeof(rnd), a->dummy, sizeof(a->dummy))) {
		free(a);
		errno = EAGAIN;
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->cond, NULL);
	errno = pthread_create(&a->thread, NULL, auth_worker, a);
	if (errno) {
		int e = errno;

		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		errno = e;
		return NULL;
	}
	a->started = true;
	return a;
}

static void job_free(struct auth_job *j)
{
	if (j->ev)
		event_free(j->ev);
	if (j->password) {
		OPENSSL_cleanse(j->password, strlen(j->password));
		free(j->password);
	}
	OPENSSL_cleanse(j->key, sizeof(j->key));
	free(j);
}

static void pending_remove(struct prom_auth *a, struct auth_job *j)
{
	struct auth_job **pp = &a->pending;

	while (*pp && *pp != j)
		pp = &(*pp)->pnext;
	if (*pp) {
		*pp = j->pnext;
		a->npending--;
	}
}

static struct auth_addr *addr_get(struct prom_auth *a, const char *host,
				  int64_t now)
{
	struct auth_addr *free_slot = NULL, *oldest = &a->addrs[0];

	for (size_t i = 0; i < PROM_AUTH_ADDRS_MAX; i++) {
		struct auth_addr *x = &a->addrs[i];

		if (x->host[0] && strcmp(x->host, host) == 0) {
			x->used = now;
			return x;
		}
		if (!x->host[0] && !free_slot)
			free_slot = x;
		if (x->used < oldest->used)
			oldest = x;
	}
	if (!free_slot) {
		free_slot = oldest;
		memset(free_slot, 0, sizeof(*free_slot));
	}
	snprintf(free_slot->host, sizeof(free_slot->host), "%s", host);
	free_slot->used = now;
	free_slot->backoff = NS_PER_S;
	return free_slot;
}

/* The cached verdict of @key: 1 verified, 0 refused, -1 none. */
static int cache_get(struct prom_auth *a, const unsigned char *key,
		     int64_t now)
{
	for (size_t i = 0; i < PROM_AUTH_CACHE_MAX; i++)
		if (a->cache[i].expires > now &&
		    CRYPTO_memcmp(a->cache[i].key, key, 32) == 0)
			return a->cache[i].ok;
	return -1;
}

static void cache_put(struct prom_auth *a, const unsigned char *key, bool ok,
		      int64_t now)
{
	struct auth_cache *slot = &a->cache[0];

	for (size_t i = 0; i < PROM_AUTH_CACHE_MAX; i++) {
		if (a->cache[i].expires > now &&
		    CRYPTO_memcmp(a->cache[i].key, key, 32) == 0) {
			slot = &a->cache[i];
			break;
		}
		if (a->cache[i].expires < slot->expires)
			slot = &a->cache[i];
	}
	memcpy(slot->key, key, 32);
	slot->ok = ok;
	slot->expires = now + (ok ? PROM_AUTH_CACHE_S : PROM_AUTH_REFUSED_S) *
				      NS_PER_S;
}

/* The verdict of a job, on the loop thread. */
static void auth_judged(evutil_socket_t fd, short what, void *arg)
{
	struct auth_job *j = arg;
	struct prom_auth *a = j->a;
	int64_t now = tally_monotonic_ns();
	struct auth_addr *ad = addr_get(a, j->host, now);

	pending_remove(a, j);
	tally_count_event(a->inst, "auth_bcrypt", 1);
	cache_put(a, j->key, j->ok, now);
	if (j->ok) {
		ad->until = 0;
		ad->backoff = NS_PER_S;
	} else {
		ad->until = now + ad->backoff;
		if (ad->backoff < PROM_AUTH_BACKOFF_MAX_S * NS_PER_S)
			ad->backoff *= 2;
		if (ad->backoff > PROM_AUTH_BACKOFF_MAX_S * NS_PER_S)
			ad->backoff = PROM_AUTH_BACKOFF_MAX_S * NS_PER_S;
	}
	if (j->req) {
		evhttp_connection_set_closecb(j->evcon, NULL, NULL);
		j->done(j->req, j->ok ? PROM_AUTH_OK : PROM_AUTH_DENIED,
			j->arg);
	}
	job_free(j);
}

/* The connection of a waiting request closed: forget the request. */
static void auth_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct auth_job *j = arg;

	j->req = NULL;
}

/* The peer's address as text, "" when unknown. */
static void peer_host(struct evhttp_request *req, char *host, size_t size)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	const struct sockaddr *sa = c ? evhttp_connection_get_addr(c) : NULL;

	host[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  host, (socklen_t)size);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)sa)->sin6_addr, host,
			  (socklen_t)size);
}

/*
 * User and password of a "Basic" Authorization header, decoded into @buf
 * (NUL-terminated, the user's ':' made a NUL). Return: 0, or -1.
 */
static int basic_credentials(const char *h, char *buf, size_t size,
			     const char **user, const char **password)
{
	size_t n, pad = 0;
	int len;
	char *colon;

	if (!h || strncasecmp(h, "Basic ", 6) != 0)
		return -1;
	h += 6;
	while (*h == ' ')
		h++;
	n = strlen(h);
	while (n && h[n - 1] == ' ')
		n--;
	if (!n || n % 4 || n / 4 * 3 + 1 > size)
		return -1;
	len = EVP_DecodeBlock((unsigned char *)buf, (const unsigned char *)h,
			      (int)n);
	if (len < 0)
		return -1;
	pad = (h[n - 1] == '=') + (h[n - 2] == '=');
	len -= (int)pad;
	buf[len] = '\0';
	if (memchr(buf, '\0', (size_t)len))
		return -1;
	colon = strchr(buf, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	*user = buf;
	*password = colon + 1;
	return 0;
}

static void auth_key(struct prom_auth *a, const char *user,
		     const char *password, unsigned char *key)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = 32;

	memset(key, 0, 32);
	if (!c)
		return;
	if (EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(c, a->salt, sizeof(a->salt)) == 1 &&
	    EVP_DigestUpdate(c, user, strlen(user) + 1) == 1 &&
	    EVP_DigestUpdate(c, password, strlen(password)) == 1)
		EVP_DigestFinal_ex(c, key, &n);
	EVP_MD_CTX_free(c);
}

enum prom_auth_verdict prom_auth_request(struct prom_auth *a,
					 struct evhttp_request *req,
					 prom_auth_done done, void *arg)
{
	const char *h = evhttp_find_header(evhttp_request_get_input_headers(req),
					   "Authorization");
	char buf[AUTH_MAX_HEADER];
	const char *user, *password, *hash;
	int64_t now = tally_monotonic_ns();
	unsigned char key[32];
	struct auth_addr *ad;
	struct auth_job *j;
	char host[INET6_ADDRSTRLEN];
	enum prom_auth_verdict v = PROM_AUTH_DENIED;

	if (basic_credentials(h, buf, sizeof(buf), &user, &password) < 0)
		goto out_denied;
	/*
	 * bcrypt reads the first 72 bytes only: a longer password would pass
	 * with any tail (and each tail cost a bcrypt, being a new cache key).
	 * htpasswd -B and Go's bcrypt refuse to hash one, so no user has one.
	 */
	if (strlen(password) > PROM_AUTH_MAX_PASSWORD)
		goto out_denied;
	auth_key(a, user, password, key);
	switch (cache_get(a, key, now)) {
	case 1:
		v = PROM_AUTH_OK;
		goto out;
	case 0: /* the same wrong credentials again: no bcrypt, no backoff */
		goto out_denied;
	}
	peer_host(req, host, sizeof(host));
	ad = addr_get(a, host, now);
	if (now < ad->until || a->npending >= PROM_AUTH_MAX_PENDING) {
		tally_count_event(a->inst, "auth_rate_limited", 1);
		v = PROM_AUTH_LIMITED;
		goto out;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		goto out_denied;
	hash = tally_labels_get(a->users, user);
	j->known = hash != NULL;
	snprintf(j->hash, sizeof(j->hash), "%s", hash ? hash : a->dummy);
	j->password = strdup(password);
	j->ev = event_new(a->base, -1, 0, auth_judged, j);
	if (!j->password || !j->ev) {
		job_free(j);
		goto out_denied;
	}
	j->a = a;
	j->req = req;
	j->evcon = evhttp_request_get_connection(req);
	j->done = done;
	j->arg = arg;
	memcpy(j->key, key, sizeof(key));
	memcpy(j->host, host, sizeof(host));
	if (j->evcon)
		evhttp_connection_set_closecb(j->evcon, auth_conn_closed, j);
	j->pnext = a->pending;
	a->pending = j;
	a->npending++;
	pthread_mutex_lock(&a->lock);
	*a->qtail = j;
	a->qtail = &j->next;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	v = PROM_AUTH_PENDING;
	goto out;

out_denied:
	v = PROM_AUTH_DENIED;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	OPENSSL_cleanse(key, sizeof(key));
	return v;
}

void prom_auth_free(struct prom_auth *a)
{
	if (!a)
		return;
	if (a->started) {
		pthread_mutex_lock(&a->lock);
		a->stop = true;
		pthread_cond_signal(&a->cond);
		pthread_mutex_unlock(&a->lock);
		pthread_join(a->thread, NULL);
	}
	/* queued or judged but not delivered: their requests go with evhttp */
	while (a->pending) {
		struct auth_job *j = a->pending;

		a->pending = j->pnext;
		if (j->req && j->evcon)
			evhttp_connection_set_closecb(j->evcon, NULL, NULL);
		job_free(j);
	}
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	OPENSSL_cleanse(a->salt, sizeof(a->salt));
	OPENSSL_cleanse(a->cache, sizeof(a->cache));
	free(a);
}

#else /* !HAVE_TLS */

int prom_auth_check_users(struct tally_instance *inst,
			  const struct tally_labels *users)
{
	tally_log(inst, LOG_ERR,
		  "basic_auth_users: this tallyd was built without basic "
		  "auth: %s",
		  TLS_MISSING);
	errno = ENOTSUP;
	return -1;
}

struct prom_auth *prom_auth_new(struct event_base *base,
				struct tally_instance *inst,
				const struct tally_labels *users)
{
	errno = ENOTSUP;
	return NULL;
}

enum prom_auth_verdict prom_auth_request(struct prom_auth *a,
					 struct evhttp_request *req,
					 prom_auth_done done, void *arg)
{
	return PROM_AUTH_DENIED;
}

void prom_auth_free(struct prom_auth *a)
{
}

#endif /* HAVE_TLS */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/rate_limit/state.c - token buckets over span streams
 *
 * Layout, chosen for the hot path (a span passing under the limit):
 *   - keys live in the core's bounded table (tally/lru.h); the most
 *     recently used key is looked at first, so consecutive events of one
 *     source cost a compare of the pid and host, no hash;
 *   - a bucket is refilled only when the time has moved since its last
 *     event (a filter passes one time per batch);
 *   - the table of dropped begins is looked at only while it holds
 *     something: under the limit an end costs nothing but the key lookup.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/lru.h>

#include "state.h"

#define RL_MAX_FILL_S 4e9 /* seconds a bucket may take to fill up */

struct rl_bucket {
	struct tally_lru_node node;
	int64_t credit;		 /* ns of refill time held, <= cap_ns */
	int64_t last_ns;	 /* CLOCK_MONOTONIC ns of the last refill */
	struct rl_bucket *dirty; /* next on the list of unreported keys */
	bool is_dirty;
	uint32_t pid;	   /* RL_KEY_PROCESS */
	uint32_t host_len; /* RL_KEY_PROCESS: name[] is "host:pid" */
	uint64_t unreported[RL_NVERDICTS];
	char name[];
};

/* A dropped begin whose end is due: its lane and id, and how many. */
struct rl_pending {
	struct tally_hnode node;
	uint64_t span_id;
	uint32_t pid;
	uint32_t tid;
	uint32_t count; /* dropped begins of this id still open */
	const char *host;
	char trace[]; /* then host */
};

struct rl_state {
	struct rl_opts opts;
	/*
	 * The bucket counted in time rather than tokens, so that refills add
	 * up exactly (a token every 100 ms stays that over hours): a token
	 * is cost_ns of credit, a full bucket cap_ns.
	 */
	int64_t cost_ns;
	int64_t cap_ns;
	struct tally_lru keys;
	struct tally_htable pending;
	uint32_t npending; /* sum of the entries' counts */
	struct rl_bucket *dirty;
	struct rl_bucket
		*other; /* key "other": drops when no key could be made */
	struct rl_counters counters;
};

/* What a lookup compares against: the key of one span. */
struct rl_lookup {
	const char *s; /* host, trace id or input name */
	uint32_t pid;
};

static const char *const rl_reasons[RL_NVERDICTS] = {
	[RL_PASS] = "passed",
	[RL_LIMITED] = "rate_limited",
	[RL_PARENT] = "parent_limited",
	[RL_END] = "limited_end",
};

const char *rl_verdict_reason(enum rl_verdict v)
{
	return v < RL_NVERDICTS ? rl_reasons[v] : "unknown";
}

/* Whether @opts are valid for rl_state_new() and rl_state_retune(). */
static bool rl_opts_valid(const struct rl_opts *opts)
{
	/* a full bucket must fit in int64_t ns: up to about 126 years */
	return opts->rate > 0 && opts->burst >= 1 && opts->max_keys &&
	       opts->max_pending && opts->key <= RL_KEY_GLOBAL &&
	       opts->burst / opts->rate <= RL_MAX_FILL_S;
}

/* A token's and a full bucket's credit, in ns, for valid @opts. */
static void rl_costs(const struct rl_opts *opts, int64_t *cost, int64_t *cap)
{
	*cost = llround(1e9 / opts->rate);
	if (*cost < 1)
		*cost = 1;
	*cap = llround(opts->burst * (double)*cost);
}

struct rl_state *rl_state_new(const struct rl_opts *opts)
{
	struct rl_state *st;

	if (!rl_opts_valid(opts)) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->opts = *opts;
	rl_costs(opts, &st->cost_ns, &st->cap_ns);
	st->other = calloc(1, sizeof(*st->other) + sizeof("other"));
	if (!st->other) {
		free(st);
		return NULL;
	}
	memcpy(st->other->name, "other", sizeof("other"));
	tally_lru_init(&st->keys, opts->max_keys);
	return st;
}

const struct rl_counters *rl_state_counters(const struct rl_state *st)
{
	return &st->counters;
}

uint32_t rl_state_keys(const struct rl_state *st)
{
	return (uint32_t)tally_lru_count(&st->keys);
}

uint32_t rl_state_pending(const struct rl_state *st)
{
	return st->npending;
}

/* ---- reporting */

static void rl_report(struct rl_state *st, struct rl_bucket *b)
{
	for (int v = RL_LIMITED; v < RL_NVERDICTS; v++) {
		if (b->unreported[v] && st->opts.report)
			st->opts.report(st->opts.ctx, b->name,
					(enum rl_verdict)v, b->unreported[v]);
		b->unreported[v] = 0;
	}
	b->is_dirty = false;
}

void rl_state_flush(struct rl_state *st)
{
	struct rl_bucket *b = st->dirty, *next;

	for (; b; b = next) {
		next = b->dirty;
		b->dirty = NULL;
		rl_report(st, b);
	}
	st->dirty = NULL;
}

static void rl_count(struct rl_state *st, struct rl_bucket *b,
		     enum rl_verdict v)
{
	st->counters.dropped[v]++;
	b->unreported[v]++;
	if (!b->is_dirty) {
		b->is_dirty = true;
		b->dirty = st->dirty;
		st->dirty = b;
	}
}

/* Forget key @b, reporting what it dropped first. */
static void rl_bucket_forget(struct rl_state *st, struct rl_bucket *b)
{
	if (b->is_dirty) {
		struct rl_bucket **pp = &st->dirty;

		while (*pp != b)
			pp = &(*pp)->dirty;
		*pp = b->dirty;
		rl_report(st, b);
	}
	tally_lru_remove(&st->keys, &b->node);
	free(b);
}

void rl_state_free(struct rl_state *st)
{
	struct tally_lru_node *n;
	struct tally_hnode *p;

	if (!st)
		return;
	rl_state_flush(st);
	while ((n = tally_lru_oldest(&st->keys)))
		rl_bucket_forget(st,
				 tally_container_of(n, struct rl_bucket, node));
	tally_lru_fini(&st->keys);
	/* the pending entries: every bucket's chain, by hash */
	for (size_t i = 0; st->pending.b && i <= st->pending.mask; i++) {
		while ((p = st->pending.b[i])) {
			st->pending.b[i] = p->next;
			free(tally_container_of(p, struct rl_pending, node));
		}
	}
	tally_htable_fini(&st->pending);
	free(st->other);
	free(st);
}

/* ---- keys */

/* Whether @b is the key of (host @k->s, pid @k->pid): name "host:pid". */
static inline bool rl_process_eq(const struct tally_lru_node *n,
				 const void *key)
{
	const struct rl_bucket *b =
		tally_container_of(n, struct rl_bucket, node);
	const struct rl_lookup *k = key;
	uint32_t i;

	if (b->pid != k->pid)
		return false;
	/* host names are short: a loop the compiler keeps inline */
	for (i = 0; i < b->host_len; i++)
		if (b->name[i] != k->s[i])
			return false; /* also where k->s ends first */
	return !k->s[i];
}

static inline bool rl_name_eq(const struct tally_lru_node *n, const void *key)
{
	const struct rl_bucket *b =
		tally_container_of(n, struct rl_bucket, node);

	return !strcmp(b->name, ((const struct rl_lookup *)key)->s);
}

static uint64_t rl_key_hash(const struct rl_state *st,
			    const struct rl_lookup *k)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, k->s);

	if (st->opts.key == RL_KEY_PROCESS)
		h = tally_hash_mix(h ^ k->pid);
	return h;
}

/* A new full bucket for @k, evicting the oldest key when the table is full. */
static struct rl_bucket *rl_bucket_new(struct rl_state *st,
				       const struct rl_lookup *k, uint64_t h,
				       int64_t now_ns)
{
	size_t sl = strlen(k->s);
	struct rl_bucket *b = calloc(1, sizeof(*b) + sl + 12);

	if (!b)
		return NULL;
	memcpy(b->name, k->s, sl + 1);
	if (st->opts.key == RL_KEY_PROCESS) {
		b->pid = k->pid;
		b->host_len = (uint32_t)sl;
		snprintf(b->name + sl, 12, ":%" PRIu32, k->pid);
	}
	b->credit = st->cap_ns;
	b->last_ns = now_ns;
	if (tally_lru_reserve(&st->keys) < 0) {
		free(b);
		return NULL;
	}
	if (tally_lru_full(&st->keys)) {
		rl_bucket_forget(st,
				 tally_container_of(tally_lru_oldest(&st->keys),
						    struct rl_bucket, node));
		st->counters.keys_evicted++;
	}
	(void)tally_lru_insert(&st->keys, &b->node, h); /* reserved */
	return b;
}

/*
 * The bucket of key @k, not the most recently used one: found, or made.
 * Without memory, the drops are counted under the state's key "other".
 */
static struct rl_bucket *
rl_bucket_find(struct rl_state *st, const struct rl_lookup *k,
	       bool (*eq)(const struct tally_lru_node *, const void *),
	       int64_t now_ns)
{
	uint64_t h = rl_key_hash(st, k);
	struct tally_lru_node *n = tally_lru_find(&st->keys, h, eq, k);
	struct rl_bucket *b;

	if (n)
		return tally_container_of(n, struct rl_bucket, node);
	b = rl_bucket_new(st, k, h, now_ns);
	if (!b) {
		st->counters.nomem++;
		b = st->other;
	}
	return b;
}

/*
 * The bucket of @sp. The most recently used key is compared first, with
 * the comparison of the instance's kind of key inlined: consecutive events
 * mostly come from one source.
 */
static inline struct rl_bucket *rl_bucket_of(struct rl_state *st,
					     const struct tally_span *sp,
					     const char *input, int64_t now_ns)
{
	struct tally_lru_node *n = tally_lru_newest(&st->keys);
	struct rl_lookup k = { .s = "global" };

	switch (st->opts.key) {
	case RL_KEY_PROCESS:
		k.s = sp->src.host ? sp->src.host : "";
		k.pid = sp->src.pid;
		if (n && rl_process_eq(n, &k))
			break;
		return rl_bucket_find(st, &k, rl_process_eq, now_ns);
	case RL_KEY_TRACE:
	case RL_KEY_INPUT:
		k.s = st->opts.key == RL_KEY_TRACE ? sp->trace : input;
		k.s = k.s ? k.s : "";
		if (n && rl_name_eq(n, &k))
			break;
		return rl_bucket_find(st, &k, rl_name_eq, now_ns);
	case RL_KEY_GLOBAL:
		if (n)
			break;
		return rl_bucket_find(st, &k, rl_name_eq, now_ns);
	}
	return tally_container_of(n, struct rl_bucket, node);
}

/* The credit of @b at @now_ns (never decreasing time assumed). */
static inline int64_t rl_credit(const struct rl_state *st,
				const struct rl_bucket *b, int64_t now_ns)
{
	int64_t dt = now_ns - b->last_ns;

	if (dt <= 0)
		return b->credit;
	return dt >= st->cap_ns - b->credit ? st->cap_ns : b->credit + dt;
}

/* Take a token from @b at @now_ns: whether there was one. */
static inline bool rl_take(const struct rl_state *st, struct rl_bucket *b,
			   int64_t now_ns)
{
	if (now_ns > b->last_ns) {
		b->credit = rl_credit(st, b, now_ns);
		b->last_ns = now_ns;
	}
	if (b->credit < st->cost_ns)
		return false;
	b->credit -= st->cost_ns;
	return true;
}

/* ---- dropped begins whose end is due */

static uint64_t rl_pending_hash(const struct tally_span *sp, uint64_t id)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, sp->trace);

	h = tally_hash_str(h, sp->src.host ? sp->src.host : "");
	h ^= (uint64_t)sp->src.pid << 32 | sp->src.tid;
	return tally_hash_mix(h ^ tally_hash_mix(id));
}

static struct rl_pending *rl_pending_find(struct rl_state *st,
					  const struct tally_span *sp,
					  uint64_t id, uint64_t h)
{
	const char *host = sp->src.host ? sp->src.host : "";
	struct tally_hnode *p;

	tally_htable_for_each_hash(&st->pending, h, p)
	{
		struct rl_pending *e =
			tally_container_of(p, struct rl_pending, node);

		if (e->span_id == id && e->pid == sp->src.pid &&
		    e->tid == sp->src.tid && !strcmp(e->trace, sp->trace) &&
		    !strcmp(e->host, host))
			return e;
	}
	return NULL;
}

/* Remember the drop of begin @sp. Return: 0, or -1 (full, or ENOMEM). */
static int rl_pending_add(struct rl_state *st, const struct tally_span *sp)
{
	uint64_t h = rl_pending_hash(sp, sp->span_id);
	const char *host = sp->src.host ? sp->src.host : "";
	struct rl_pending *e;
	size_t tl, hl;

	if (st->npending >= st->opts.max_pending) {
		st->counters.pending_full++;
		return -1;
	}
	e = rl_pending_find(st, sp, sp->span_id, h);
	if (e) {
		e->count++;
		st->npending++;
		return 0;
	}
	tl = strlen(sp->trace);
	hl = strlen(host);
	e = malloc(sizeof(*e) + tl + 1 + hl + 1);
	if (!e || tally_htable_reserve(&st->pending) < 0) {
		free(e);
		st->counters.nomem++;
		return -1;
	}
	memcpy(e->trace, sp->trace, tl + 1);
	memcpy(e->trace + tl + 1, host, hl + 1);
	e->host = e->trace + tl + 1;
	e->span_id = sp->span_id;
	e->pid = sp->src.pid;
	e->tid = sp->src.tid;
	e->count = 1;
	e->node.hash = h;
	tally_htable_insert(&st->pending, &e->node);
	st->npending++;
	return 0;
}

/*
 * Whether span @id of @sp's lane is a dropped begin still open; with
 * @take, one such begin is closed (its end is being dropped).
 */
static bool rl_pending_has(struct rl_state *st, const struct tally_span *sp,
			   uint64_t id, bool take)
{
	uint64_t h = rl_pending_hash(sp, id);
	struct rl_pending *e = rl_pending_find(st, sp, id, h);

	if (!e)
		return false;
	if (take) {
		st->npending--;
		if (!--e->count) {
			tally_htable_remove(&st->pending, &e->node);
			free(e);
		}
	}
	return true;
}

/* ---- decisions */

/*
 * The decision, inlined in both entry points: the batch loop is the hot
 * path (an end while nothing is dropped costs a few compares, a begin the
 * newest key's compare and its refill).
 */
static inline __attribute__((always_inline)) enum rl_verdict
rl_decide(struct rl_state *st, const struct tally_span *sp, const char *input,
	  int64_t now_ns)
{
	struct rl_bucket *b;

	if (sp->phase == TALLY_SPAN_END) {
		/* Ends take no token: only a dropped begin's end is looked at
		 */
		if (!st->npending || !sp->trace ||
		    !rl_pending_has(st, sp, sp->span_id, true))
			return RL_PASS;
		rl_count(st, rl_bucket_of(st, sp, input, now_ns), RL_END);
		return RL_END;
	}
	if (sp->phase != TALLY_SPAN_BEGIN || !sp->trace)
		return RL_PASS; /* no lane: nothing to match its end by */

	b = rl_bucket_of(st, sp, input, now_ns);
	if (st->npending && sp->parent_id &&
	    rl_pending_has(st, sp, sp->parent_id, false)) {
		/* Inside a dropped span: dropped with it, no token taken. */
		if (rl_pending_add(st, sp) < 0)
			goto out_pass;
		rl_count(st, b, RL_PARENT);
		return RL_PARENT;
	}
	if (rl_take(st, b, now_ns))
		goto out_pass;
	if (rl_pending_add(st, sp) < 0)
		goto out_pass;
	rl_count(st, b, RL_LIMITED);
	return RL_LIMITED;

out_pass:
	st->counters.passed++;
	return RL_PASS;
}

enum rl_verdict rl_state_span(struct rl_state *st, const struct tally_span *sp,
			      const char *input, int64_t now_ns)
{
	return rl_decide(st, sp, input, now_ns);
}

size_t rl_state_records(struct rl_state *st, const struct tally_record *recs,
			size_t n, const char *input, int64_t now_ns, bool *keep)
{
	size_t dropped = 0;

	for (size_t i = 0; i < n; i++) {
		bool pass =
			recs[i].kind != TALLY_REC_SPAN ||
			rl_decide(st, &recs[i].span, input, now_ns) == RL_PASS;

		if (pass && !dropped)
			continue;
		if (!dropped) /* the first drop: the records before it pass */
			memset(keep, 1, i * sizeof(*keep));
		keep[i] = pass;
		dropped += !pass;
	}
	return dropped;
}

uint32_t rl_state_expire(struct rl_state *st, int64_t now_ns)
{
	struct tally_lru_node *n = tally_lru_oldest(&st->keys), *newer;
	uint32_t count = 0;

	for (; n; n = newer) {
		struct rl_bucket *b =
			tally_container_of(n, struct rl_bucket, node);

		/*
		 * Not full yet: keys used after it are likely not full either;
		 * the next tick looks again.
		 */
		if (rl_credit(st, b, now_ns) < st->cap_ns)
			break;
		newer = tally_lru_newer(&st->keys, n);
		rl_bucket_forget(st, b);
		st->counters.keys_expired++;
		count++;
	}
	return count;
}

int rl_state_retune(struct rl_state *st, const struct rl_opts *opts)
{
	struct tally_lru_node *n;
	int64_t cost, cap;

	if (!rl_opts_valid(opts)) {
		errno = EINVAL;
		return -1;
	}
	rl_state_flush(st); /* to the report callback it was made for */
	if (opts->key != st->opts.key) {
		/* buckets of another kind of key mean nothing now */
		while ((n = tally_lru_oldest(&st->keys)))
			rl_bucket_forget(st, tally_container_of(
						     n, struct rl_bucket, node));
	}
	rl_costs(opts, &cost, &cap);
	/* every bucket keeps its tokens, up to the new size */
	for (n = tally_lru_oldest(&st->keys); n;
	     n = tally_lru_newer(&st->keys, n)) {
		struct rl_bucket *b = tally_container_of(n, struct rl_bucket,
							 node);
		double tokens = (double)b->credit / (double)st->cost_ns;
		double credit = tokens * (double)cost;

		b->credit = credit >= (double)cap ? cap : llround(credit);
	}
	st->opts = *opts;
	st->cost_ns = cost;
	st->cap_ns = cap;
	st->keys.max = opts->max_keys;
	while (tally_lru_count(&st->keys) > opts->max_keys) {
		n = tally_lru_oldest(&st->keys);
		rl_bucket_forget(st,
				 tally_container_of(n, struct rl_bucket, node));
		st->counters.keys_evicted++;
	}
	return 0;
}

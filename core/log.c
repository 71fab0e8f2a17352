/* SPDX-License-Identifier: MIT */
/*
 * core/log.c - logging with per-source burst suppression, drop counters
 *
 * A broken peer can make a plugin log the same complaint thousands of times
 * a second; that must not flood syslog nor cost the loop its time. Each
 * (instance, format string) pair, or (instance, format, subject) for
 * tally_log_about(), may log LOG_BURST lines per log_window seconds; the
 * rest are counted, and the first line after the window says how many were
 * suppressed. The core's own notices and info lines are not
 * limited (they follow an operator's action: start, signal, reload).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <tally/hash.h>
#include <tally/log.h>
#include <tally/utf8.h>

#include "core-internal.h"

#define LOG_BURST	5
#define LOG_SLOTS	128

static time_t log_window = 10;	/* seconds; tests shorten it */

struct log_slot {
	const void *inst;
	const char *fmt;
	uint64_t about; /* hash of tally_log_about()'s subject, or 0 */
	time_t window;
	unsigned count;
	unsigned suppressed;
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static enum tally_log_target log_target = TALLY_LOG_STDERR;
static int log_level = LOG_INFO;
static struct log_slot log_slots[LOG_SLOTS];
/* counts for NULL go here: the running core's own, handed in by it */
static struct tally_instance *log_core_inst;

static const char *const log_prio_names[] = {
	[LOG_EMERG] = "emerg",	 [LOG_ALERT] = "alert",
	[LOG_CRIT] = "crit",	 [LOG_ERR] = "error",
	[LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info",	 [LOG_DEBUG] = "debug",
};

void tally_log_setup(enum tally_log_target target, int level)
{
	pthread_mutex_lock(&log_lock);
	if (target == TALLY_LOG_SYSLOG && log_target != TALLY_LOG_SYSLOG)
		openlog("tallyd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_target = target;
	log_level = level;
	pthread_mutex_unlock(&log_lock);
}

bool tally_log_syslog_available(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	bool ok = false;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", _PATH_LOG);
	/* what glibc's openlog() tries, in its order */
	for (size_t i = 0; i < 2 && !ok; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		close(fd);
	}
	return ok;
}

void tally_log_set_level(int level)
{
	pthread_mutex_lock(&log_lock);
	log_level = level;
	pthread_mutex_unlock(&log_lock);
}

void tally_log_set_window(unsigned seconds)
{
	pthread_mutex_lock(&log_lock);
	log_window = seconds;
	pthread_mutex_unlock(&log_lock);
}

int tally_log_level_parse(const char *s)
{
	for (int i = 0; i <= LOG_DEBUG; i++) {
		if (!strcasecmp(s, log_prio_names[i]))
			return i;
	}
	if (!strcasecmp(s, "err"))
		return LOG_ERR;
	if (!strcasecmp(s, "warn"))
		return LOG_WARNING;
	errno = EINVAL;
	return -1;
}

static void log_emit(int prio, const char *prefix, const char *msg)
{
	if (log_target == TALLY_LOG_SYSLOG) {
		syslog(prio, "%s%s", prefix, msg);
		return;
	}
	fprintf(stderr, "tallyd: %s: %s%s\n", log_prio_names[prio & 7], prefix,
		msg);
}

/* Returns how many earlier messages were suppressed, or -1 to suppress. */
static long log_throttle(const void *inst, const char *fmt, uint64_t about)
{
	size_t h = ((uintptr_t)inst >> 4) ^ ((uintptr_t)fmt >> 2) ^
		   (size_t)about;
	struct log_slot *s = &log_slots[h % LOG_SLOTS];
	time_t now = time(NULL);
	long prev;

	if (s->inst != inst || s->fmt != fmt || s->about != about) {
		/* slot taken by another source: give it up (best effort) */
		*s = (struct log_slot){
			.inst = inst, .fmt = fmt, .about = about, .window = now
		};
	}
	if (now - s->window >= log_window) {
		prev = s->suppressed;
		s->window = now;
		s->count = 0;
		s->suppressed = 0;
	} else {
		prev = 0;
	}
	if (++s->count > LOG_BURST) {
		s->suppressed++;
		return -1;
	}
	return prev;
}

static void log_v(const struct tally_instance *inst, int prio, uint64_t about,
		  const char *fmt, va_list ap)
{
	char msg[1024], prefix[160] = "";
	long suppressed;

	if (prio > log_level)
		return;
	/*
	 * Decide first: a suppressed message costs no formatting. The core's
	 * own notices (start, SIGHUP, reload applied) answer an operator's
	 * action, one line each, and are never suppressed: a burst of
	 * reloads must show every one.
	 */
	suppressed = 0;
	if (inst || prio <= LOG_WARNING) {
		pthread_mutex_lock(&log_lock);
		suppressed = log_throttle(inst, fmt, about);
		pthread_mutex_unlock(&log_lock);
	}
	if (suppressed < 0)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (inst && inst->setup && inst->cfile && prio <= LOG_WARNING) {
		/* set-up problems point at the configuration, like the core's */
		tally_log_conf(prio, inst->cfile, inst->cline, "%s: %s",
			       inst->label, msg);
		return;
	}
	if (inst && inst->label)
		snprintf(prefix, sizeof(prefix), "%s: ", inst->label);
	pthread_mutex_lock(&log_lock);
	if (suppressed > 0) {
		char note[64];

		snprintf(note, sizeof(note), "suppressed %ld similar messages",
			 suppressed);
		log_emit(prio, prefix, note);
	}
	log_emit(prio, prefix, msg);
	pthread_mutex_unlock(&log_lock);
}

void tally_vlog(const struct tally_instance *inst, int prio, const char *fmt,
		va_list ap)
{
	log_v(inst, prio, 0, fmt, ap);
}

void tally_log_about(const struct tally_instance *inst, int prio,
		     const char *about, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	/* | 1: never 0, the key of tally_log() */
	log_v(inst, prio, tally_hash_str(TALLY_HASH_SEED, about) | 1, fmt, ap);
	va_end(ap);
}

void tally_log(const struct tally_instance *inst, int prio, const char *fmt,
	       ...)
{
	va_list ap;

	va_start(ap, fmt);
	tally_vlog(inst, prio, fmt, ap);
	va_end(ap);
}

void tally_log_limited(struct tally_log_limit *l, double every,
		       const struct tally_instance *inst, int prio,
		       const char *fmt, ...)
{
	struct timespec ts;
	int64_t now;
	char msg[1024];
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (l->next_ns && now < l->next_ns) {
		l->quiet++;
		return;
	}
	l->next_ns = now + (int64_t)(every * 1e9);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (l->quiet)
		tally_log(inst, prio, "%s (%llu more times in the last %.0f s)",
			  msg, (unsigned long long)l->quiet, every);
	else
		tally_log(inst, prio, "%s", msg);
	l->quiet = 0;
}

size_t tally_log_peer_text(char *dst, size_t dstlen, const char *src,
			   size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0, i = 0, step = 1;

	if (!dstlen)
		return 0;
	while (len && (src[len - 1] == ' ' || src[len - 1] == '\n' ||
		       src[len - 1] == '\r' || src[len - 1] == '\t'))
		len--;
	while (i < len && (src[i] == ' ' || src[i] == '\n' ||
			   src[i] == '\r' || src[i] == '\t'))
		i++;
	for (; i < len; i += step) {
		unsigned char ch = (unsigned char)src[i];
		int seq = ch < 0x80 ? 1 : tally_utf8_seq(src + i, len - i);
		char e[4];
		size_t n = 1;

		step = 1;
		e[0] = (char)ch;
		if (seq > 1) {
			/* a whole character: copied, never cut inside */
			memcpy(e, src + i, (size_t)seq);
			n = step = (size_t)seq;
		} else if (ch == '\n' || ch == '\r' || ch == '\t') {
			e[0] = '\\';
			e[1] = ch == '\n' ? 'n' : ch == '\r' ? 'r' : 't';
			n = 2;
		} else if (seq < 0 || ch < 0x20 || ch == 0x7f) {
			/* a control character, or a byte of no character */
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[ch >> 4];
			e[3] = hex[ch & 15];
			n = 4;
		}
		/* room for this, and for "..." if more follows */
		if (o + n + (i + step < len ? 3 : 0) >= dstlen) {
			if (dstlen > 3) {
				while (o + 3 >= dstlen)
					o--;
				memcpy(dst + o, "...", 3);
				o += 3;
			} else {
				o = 0;
			}
			break;
		}
		memcpy(dst + o, e, n);
		o += n;
	}
	dst[o] = '\0';
	return o;
}

void tally_log_conf(int prio, const char *file, int line, const char *fmt,
		    ...)
{
	char msg[1024];
	va_list ap;

	if (prio > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	if (file && line > 0)
		fprintf(stderr, "%s:%d: %s: %s\n", file, line,
			log_prio_names[prio & 7], msg);
	else if (file)
		fprintf(stderr, "%s: %s: %s\n", file, log_prio_names[prio & 7],
			msg);
	else
		fprintf(stderr, "tallyd: %s: %s\n", log_prio_names[prio & 7],
			msg);
	pthread_mutex_unlock(&log_lock);
}

/* Add @n to @name's entry of a by-name table; caller holds stat_lock. */
static void table_add(struct tally_stats_drop *tab, size_t *ntab,
		      const char *name, uint64_t n)
{
	size_t i;

	for (i = 0; i < *ntab; i++) {
		if (tab[i].reason == name || !strcmp(tab[i].reason, name))
			break;
	}
	if (i == *ntab) {
		if (i == TALLY_STATS_MAX_DROPS) {
			/* table full: fold into the last slot */
			i--;
			tab[i].reason = "other";
		} else {
			tab[i].reason = name;
			tab[i].n = 0;
			(*ntab)++;
		}
	}
	tab[i].n += n;
}

/* Add @n to @name's entry of a by-name counter table of @inst. */
static void count_in(struct tally_instance *inst, struct tally_stats_drop *tab,
		     size_t *ntab, const char *name, uint64_t n)
{
	pthread_mutex_lock(&inst->stat_lock);
	table_add(tab, ntab, name, n);
	pthread_mutex_unlock(&inst->stat_lock);
}

void tally_log_set_core(struct tally_instance *core_inst)
{
	__atomic_store_n(&log_core_inst, core_inst, __ATOMIC_RELEASE);
}

/* The instance a count goes to: @inst, or the core's for NULL. */
static struct tally_instance *count_target(struct tally_instance *inst)
{
	return inst ? inst : __atomic_load_n(&log_core_inst, __ATOMIC_ACQUIRE);
}

void tally_count_drop(struct tally_instance *inst, const char *reason,
		      uint64_t n)
{
	inst = count_target(inst);
	if (inst)
		count_in(inst, inst->drops, &inst->ndrops, reason, n);
}

void tally_count_event(struct tally_instance *inst, const char *event,
		       uint64_t n)
{
	inst = count_target(inst);
	if (inst)
		count_in(inst, inst->events, &inst->nevents, event, n);
}

/* Copy @key into @dst, cut to fit without splitting a UTF-8 character. */
static void key_copy(char dst[TALLY_STATS_KEY_LEN], const char *key)
{
	size_t len = strnlen(key, TALLY_STATS_KEY_LEN);

	len = tally_utf8_clip(key, len, TALLY_STATS_KEY_LEN - 1);
	memcpy(dst, key, len);
	dst[len] = '\0';
}

/*
 * The slot of (@reason, @key) in @kd, claimed if needed; NULL when every
 * slot is taken by a key that dropped something within the idle time.
 * Caller holds stat_lock.
 */
static struct tally_keyed_entry *keyed_slot(struct tally_keyed_drops *kd,
					    const char *reason, const char *key,
					    int64_t now_ns)
{
	const int64_t idle = (int64_t)TALLY_STATS_KEY_IDLE * 1000000000;
	struct tally_keyed_entry *e, *lru = NULL;
	uint64_t h;

	h = tally_hash_bytes(TALLY_HASH_SEED, key, strlen(key));
	for (size_t i = 0; i < kd->n; i++) {
		e = &kd->e[i];
		if (e->hash == h &&
		    (e->reason == reason || !strcmp(e->reason, reason)) &&
		    !strcmp(e->key, key))
			return e;
		if (!lru || e->last_ns < lru->last_ns)
			lru = e;
	}
	if (kd->n < TALLY_STATS_MAX_KEYS) {
		e = &kd->e[kd->n++];
	} else if (lru && now_ns - lru->last_ns >= idle) {
		/* the idle key's count stays in its reason's total */
		table_add(kd->other, &kd->nother, lru->reason, lru->n);
		e = lru;
	} else {
		return NULL;
	}
	e->reason = reason;
	memcpy(e->key, key, strlen(key) + 1);
	e->hash = h;
	e->n = 0;
	return e;
}

void tally_count_drop_key_at(struct tally_instance *inst, const char *reason,
			     const char *key, uint64_t n, int64_t now_ns)
{
	struct tally_keyed_entry *e;
	char k[TALLY_STATS_KEY_LEN];

	inst = count_target(inst);
	if (!inst)
		return;
	key_copy(k, key ? key : "");
	pthread_mutex_lock(&inst->stat_lock);
	table_add(inst->drops, &inst->ndrops, reason, n);
	if (!inst->keyed)
		inst->keyed = calloc(1, sizeof(*inst->keyed));
	if (!inst->keyed) {
		/* the total is counted; the breakdown waits for memory */
		pthread_mutex_unlock(&inst->stat_lock);
		return;
	}
	e = keyed_slot(inst->keyed, reason, k, now_ns);
	if (e) {
		e->n += n;
		e->last_ns = now_ns;
	} else {
		table_add(inst->keyed->other, &inst->keyed->nother, reason, n);
	}
	pthread_mutex_unlock(&inst->stat_lock);
}

void tally_count_drop_key(struct tally_instance *inst, const char *reason,
			  const char *key, uint64_t n)
{
	tally_count_drop_key_at(inst, reason, key, n, tally_monotonic_ns());
}

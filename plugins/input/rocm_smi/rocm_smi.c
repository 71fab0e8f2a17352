/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/rocm_smi/rocm_smi.c - AMD GPU metrics through librocm_smi64,
 * read by a helper process so that the library never runs inside tallyd
 *
 * Metric names and labels are Omnistat's (rocm_*, label card in KFD/HIP
 * order), units converted to base ones; see doc/plugins/rocm_smi.md.
 *
 * The library aborts its process on sysfs layouts it does not expect and
 * can block in a call on a wedged device, so it runs in tally-rocm-helper
 * (helper.c), which this input starts with fork + exec and talks to over a
 * socketpair in the line protocol of proto.h. Each tick sends "read"; the
 * answer arrives on the loop (a bufferevent) and is emitted as one batch
 * stamped with the tick's time. The loop thread never waits for the helper.
 *
 * Cost model: per read, one request line, about 15 answer lines per GPU
 * parsed in place, one interned label set per sample; the library's own
 * cost is in the helper. tallyd keeps no state per GPU.
 *
 * Failure model:
 *  - no library, no GPU, init failure: the helper says why ("fail") and
 *    exits; logged once (again only when the reason changes), the plugin
 *    idles and asks again every max_backoff seconds;
 *  - a helper that dies (abort, signal, exit) or breaks the protocol:
 *    counted as event helper_crashed; that does not answer a read within
 *    timeout: killed, counted as helper_timeout; either way the read is
 *    lost (dropped, reason "helper_crashed" / "helper_timeout") and a new
 *    helper starts after 1, 2, 4 ... seconds, at most max_backoff, the
 *    delay going back to 1 s after a read that worked;
 *  - a line the decoder refuses (rocm_proto_parse(): malformed, not
 *    UTF-8, a card the helper does not have, a value that is NaN or
 *    infinite, a temperature that is a sensor's placeholder, a percentage
 *    outside [0, 100], a negative value) or a sample this input refuses
 *    (rocm_sample_check(): its option off, skipped on its card, a series
 *    twice in one read) is dropped, counted under its reason and logged at
 *    most once a minute per reason;
 *  - a line longer than ROCM_PROTO_LINE_MAX ('\n' included) is never
 *    copied: counted as dropped (line_too_long), then as a crash;
 *  - a metric a GPU does not have is skipped for that GPU alone (logged
 *    once per helper at LOG_INFO); queries failing later are counted as
 *    event query_errors and retried by the helper with a backoff.
 *  - a helper that cannot be started (gone after the check, fork failing):
 *    counted as event helper_start_failed, logged when the reason changes,
 *    tried again every max_backoff.
 * A stopped helper is killed and reaped within ROCM_REAP_MS (the loop
 * waits that long at worst; a reload replacing the instance leaves no
 * zombie). One killed while it sits in the kernel (a wedged device) may
 * not be reaped then: its pid is kept and reaped on later ticks.
 *
 * With --once (no event loop) the read runs the same exchange with poll()
 * and the same deadlines, then stops the helper.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include <tally/hash.h>
#include <tally/plugin.h>

#include "proto.h"
#include "tally-dirs.h"

/* A start may wait on the library's device locks (5 s each) */
#define ROCM_START_EXTRA 10.0
#define ROCM_MAX_ZOMBIES 16
/* Longest wait for a killed helper's exit, and for a dead one's (ms) */
#define ROCM_REAP_MS 200
#define ROCM_GRACE_MS 100
/* timeout = 0: half the interval, at most this (seconds) */
#define ROCM_DEFAULT_TIMEOUT 2.0

/*
 * Metrics a helper does not read, grouped by metric and reason, logged as
 * one line when it is ready: one line per skip would be cut by the log's
 * burst limit on a node of eight GPUs.
 */
#define ROCM_MAX_SKIPS 32
struct rocm_skip {
	char metric[64];
	char why[160];
	char cards[96]; /* "0, 3" */
};

/*
 * Per card a helper named: the metrics it skipped (bit: enum
 * rocm_metric_id) and the series of the read being received (bit: metric
 * id; rocm_temperature_sensor_celsius: ROCM_SEEN_SENSOR + location index).
 * rocm_num_gpus, which has no card, is rocm_smi.num_seen.
 */
struct rocm_card {
	uint32_t skipped;
	uint64_t seen;
};

enum rocm_state {
	ROCM_OFF,      /* no helper; a restart is scheduled */
	ROCM_STARTING, /* helper spawned, no "ready" yet */
	ROCM_READY,    /* waiting for the next tick */
	ROCM_BUSY,     /* "read" sent, answer being received */
	ROCM_FAILED,   /* helper said "fail": waiting for its exit */
};

struct rocm_smi {
	/* options (tally/config.h fills them) */
	char *library;
	char *helper;
	double timeout;
	double max_backoff;
	bool ras;
	bool power_cap;
	bool all_temps;

	struct tally_instance *inst;
	struct event_base *base; /* NULL with --once */
	enum rocm_state state;
	pid_t pid;
	int fd;
	struct bufferevent *bev;
	struct event *deadline;
	struct event *restart;
	double backoff;		   /* delay of the next restart, seconds */
	bool want_read;		   /* a tick came while starting */
	int64_t req_ns;		   /* CLOCK_REALTIME of the read's tick */
	struct tally_batch *batch; /* the read being received */
	uint64_t samples;	   /* in @batch */
	char fail_logged[ROCM_PROTO_LINE_MAX];	/* last "fail" logged */
	char announced[128]; /* the "N GPU(s), ..." line last logged */
	/* the library's last message since the last complete read */
	char lastlib[256];
	struct rocm_skip skips[ROCM_MAX_SKIPS]; /* this helper's, grouped */
	unsigned nskips;
	pid_t zombies[ROCM_MAX_ZOMBIES];
	unsigned nzombies;
	/*
	 * What the first helper's first read had ("name card k=v" keys),
	 * and whether this helper's first read is still to come: a helper
	 * started later (after a crash, and once tallyd gave up root) may
	 * read less, and the plugin says what (rocm_lost_check()).
	 */
	char **base_keys;
	size_t nbase;
	char **cur_keys; /* this helper's first read, while it runs */
	size_t ncur;
	bool first_read;
	unsigned helpers_ready; /* helpers that completed a read */
	bool adopted;		/* base_keys are the retired instance's */
	int start_errno;	/* why the last start failed, logged */
	uint32_t ngpus;		/* the helper's "ready", 0 before */
	struct rocm_card *cards; /* indexed by card number */
	size_t ncards;
	bool num_seen;
	uint64_t lost_logged; /* hash of the lost metrics last logged */
	char broke[64];	      /* how the helper broke the protocol */
	struct tally_log_limit bad_log[ROCM_BAD_COUNT];
};

/* First bit of rocm_card.seen for the all_temperatures locations */
#define ROCM_SEEN_SENSOR 32
_Static_assert(ROCM_M_COUNT <= ROCM_SEEN_SENSOR &&
		       ROCM_SEEN_SENSOR + ROCM_TEMP_LOCATIONS <= 64,
	       "rocm_card.seen holds every metric and location");

/* Bytes of the names in the "lost" line (the log line is 1024) */
#define ROCM_LOST_LIST 640

/* A refused line's complaint: at most one line a minute per reason */
#define ROCM_BAD_LOG_EVERY 60.0

/* What a reload hands the successor: the baseline of rocm_lost_check() */
struct rocm_handed {
	char **keys;
	size_t n;
};

static void rocm_schedule_restart(struct rocm_smi *r, double delay);

static void rocm_reap(struct rocm_smi *r)
{
	for (unsigned i = 0; i < r->nzombies;) {
		if (waitpid(r->zombies[i], NULL, WNOHANG) != 0)
			r->zombies[i] = r->zombies[--r->nzombies];
		else
			i++;
	}
}

/*
 * Wait for helper @pid to exit, polling at most @ms milliseconds (the loop
 * waits that long at worst). Return: 0 with its wait status in @st, or -1
 * (errno ETIMEDOUT) while it still runs.
 */
static int rocm_wait(pid_t pid, int *st, int ms)
{
	struct timespec step = { 0, 2 * 1000 * 1000 };

	for (int waited = 0;; waited += 2) {
		pid_t w = waitpid(pid, st, WNOHANG);

		if (w == pid || (w < 0 && errno == ECHILD))
			return w == pid ? 0 : -1;
		if (waited >= ms)
			break;
		nanosleep(&step, NULL);
	}
	errno = ETIMEDOUT;
	return -1;
}

/*
 * Stop the helper: close its socket, give it @grace_ms to exit by itself
 * (a helper that died is then reaped with its own status), kill it, and
 * reap it within ROCM_REAP_MS; one stuck in the kernel (a wedged device)
 * is kept in @zombies and reaped later.
 * @status: its wait status when reaped, else -1.
 */
static void rocm_stop_helper(struct rocm_smi *r, int *status, int grace_ms)
{
	int st;

	if (status)
		*status = -1;
	if (r->bev) {
		bufferevent_free(r->bev); /* closes r->fd */
		r->bev = NULL;
	} else if (r->fd >= 0) {
		close(r->fd);
	}
	r->fd = -1;
	if (r->deadline)
		event_del(r->deadline);
	tally_batch_unref(r->batch);
	r->batch = NULL;
	if (r->pid <= 0)
		return;
	if (rocm_wait(r->pid, &st, grace_ms) == 0) {
		if (status)
			*status = st;
	} else {
		kill(r->pid, SIGKILL);
		if (rocm_wait(r->pid, &st, ROCM_REAP_MS) < 0) {
			rocm_reap(r);
			if (r->nzombies < ROCM_MAX_ZOMBIES)
				r->zombies[r->nzombies++] = r->pid;
		} else if (status) {
			*status = st;
		}
	}
	r->pid = 0;
}

static void rocm_keys_free(char ***keys, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free((*keys)[i]);
	free(*keys);
	*keys = NULL;
	*n = 0;
}

/* "name card k=v ..." of sample @m, the key a metric is known by. */
static char *rocm_key(const struct rocm_msg *m)
{
	char buf[512];
	int len = snprintf(buf, sizeof(buf), "%s", m->name);

	if (m->card >= 0 && len < (int)sizeof(buf))
		len += snprintf(buf + len, sizeof(buf) - (size_t)len,
				" on card %d", m->card);
	for (unsigned i = 0; i < m->nlabels && len < (int)sizeof(buf); i++)
		len += snprintf(buf + len, sizeof(buf) - (size_t)len,
				"%s%s=%s", i ? "," : " (", m->key[i],
				m->val[i]);
	if (m->nlabels && len < (int)sizeof(buf))
		snprintf(buf + len, sizeof(buf) - (size_t)len, ")");
	return strdup(buf);
}

/* Remember sample @m of a helper's first read (bounded; best effort). */
static void rocm_key_add(struct rocm_smi *r, const struct rocm_msg *m)
{
	char **v, *k;

	if (!r->first_read || r->ncur >= 4096)
		return;
	k = rocm_key(m);
	v = k ? realloc(r->cur_keys, (r->ncur + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(k);
		return;
	}
	r->cur_keys = v;
	r->cur_keys[r->ncur++] = k;
}

/*
 * A helper completed its first read. The first helper's is the baseline;
 * a later helper's that lacks some of it is logged, naming each metric
 * lost, and counted (event metrics_lost): a helper restarted after tallyd
 * dropped privileges (global.user) runs as that user, and what only root
 * may read is then gone until tallyd restarts.
 */
static void rocm_lost_check(struct rocm_smi *r)
{
	/* the list, whole names only; the line's other words fit the log's
	 * 1024 bytes beside it */
	char list[ROCM_LOST_LIST], more[32] = "";
	size_t len = 0, lost = 0, listed = 0;
	uint64_t h = TALLY_HASH_SEED;

	r->first_read = false;
	if (!r->helpers_ready++) {
		r->base_keys = r->cur_keys;
		r->nbase = r->ncur;
		r->cur_keys = NULL;
		r->ncur = 0;
		return;
	}
	list[0] = '\0';
	for (size_t i = 0; i < r->nbase; i++) {
		size_t j, n = strlen(r->base_keys[i]) + (len ? 2 : 0);

		for (j = 0; j < r->ncur; j++)
			if (!strcmp(r->base_keys[i], r->cur_keys[j]))
				break;
		if (j < r->ncur)
			continue;
		lost++;
		h = tally_hash_str(h, r->base_keys[i]);
		if (listed < lost - 1 || len + n >= sizeof(list))
			continue; /* one did not fit: the rest are counted */
		snprintf(list + len, sizeof(list) - len, "%s%s",
			 len ? "; " : "", r->base_keys[i]);
		len += n;
		listed++;
	}
	rocm_keys_free(&r->cur_keys, &r->ncur);
	if (!lost) {
		r->lost_logged = 0;
		return;
	}
	tally_count_event(r->inst, "metrics_lost", lost);
	/* once per change of what is lost, not at every restart */
	h = h ? h : 1;
	if (h == r->lost_logged)
		return;
	r->lost_logged = h;
	if (listed < lost)
		snprintf(more, sizeof(more), " and %zu more", lost - listed);
	tally_log(r->inst, LOG_WARNING,
		  "helper %s as uid %u reads %zu metric%s fewer than "
		  "the first one: lost %s%s%s",
		  r->adopted && r->helpers_ready == 2 ? "started by a reload"
						      : "restarted",
		  (unsigned)geteuid(), lost, lost == 1 ? "" : "s", list, more,
		  geteuid() ? " (what only root may read comes back when "
			      "tallyd restarts; see doc/plugins/rocm_smi.md)"
			    : "");
}

static int rocm_spawn(struct rocm_smi *r)
{
	char *argv[8];
	int argc = 0, sv[2];
	sigset_t all;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	argv[argc++] = r->helper;
	argv[argc++] = "-l";
	argv[argc++] = r->library;
	if (r->ras)
		argv[argc++] = "-r";
	if (r->power_cap)
		argv[argc++] = "-c";
	if (r->all_temps)
		argv[argc++] = "-t";
	argv[argc] = NULL;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* the child: async-signal-safe calls only until exec */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (sv[1] == 3)
			fcntl(3, F_SETFD, 0);
		else if (dup2(sv[1], 3) < 0)
			_exit(127);
		/* the library's own messages (its asserts) share the socket */
		if (null < 0 || dup2(null, 0) < 0 || dup2(3, 1) < 0 ||
		    dup2(3, 2) < 0)
			_exit(127);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		signal(SIGPIPE, SIG_DFL);
		execv(r->helper, argv);
		_exit(127);
	}
	close(sv[1]);
	r->pid = pid;
	r->fd = sv[0];
	r->state = ROCM_STARTING;
	r->lastlib[0] = '\0';
	r->nskips = 0;
	r->ngpus = 0;
	r->broke[0] = '\0';
	if (r->cards)
		memset(r->cards, 0, r->ncards * sizeof(*r->cards));
	r->first_read = true;
	rocm_keys_free(&r->cur_keys, &r->ncur);
	tally_count_event(r->inst, "helper_starts", 1);
	return 0;
}

/*
 * What follows a start that gave no helper: "trying again every N s", or,
 * with --once (no loop, one read), that nothing is tried again.
 */
static const char *rocm_again(const struct rocm_smi *r, char *buf, size_t size)
{
	if (!r->base)
		return "not tried again (tallyd --once reads once)";
	snprintf(buf, size, "trying again every %.3g s", r->max_backoff);
	return buf;
}

/*
 * Start a helper, or count and log why not (event helper_start_failed;
 * logged again only when the reason changes): the helper removed or made
 * unrunnable after the check, fork failing. Return: as rocm_spawn().
 */
static int rocm_start_helper(struct rocm_smi *r)
{
	int e;

	if (access(r->helper, X_OK) == 0 && rocm_spawn(r) == 0) {
		r->start_errno = 0;
		return 0;
	}
	e = errno;
	tally_count_event(r->inst, "helper_start_failed", 1);
	if (e != r->start_errno) {
		char again[64];

		tally_log(r->inst, LOG_WARNING,
			  "cannot start the helper %s: %s: no GPU metrics; %s",
			  r->helper, strerror(e),
			  rocm_again(r, again, sizeof(again)));
	}
	r->start_errno = e;
	errno = e;
	return -1;
}

static void rocm_add_sample(struct rocm_smi *r, const struct rocm_msg *m)
{
	struct tally_label pairs[1 + ROCM_PROTO_MAX_LABELS];
	struct tally_labels *ls;
	char card[16];
	size_t n = 0;
	int id = rocm_metric_find(m->name);

	if (m->card >= 0) {
		snprintf(card, sizeof(card), "%d", m->card);
		pairs[n++] = (struct tally_label){ "card", card };
	}
	for (unsigned i = 0; i < m->nlabels; i++)
		pairs[n++] = (struct tally_label){ m->key[i], m->val[i] };
	ls = tally_labels_new(pairs, n);
	if (!ls) {
		tally_count_drop(r->inst,
				 errno == ENOMEM ? "nomem" : "malformed", 1);
		return;
	}
	if (tally_batch_add_metric(r->batch, TALLY_GAUGE, m->name,
				   rocm_metrics[id].help, ls, m->value,
				   r->req_ns) < 0)
		tally_count_drop(r->inst, "nomem", 1);
	else
		r->samples++;
	rocm_key_add(r, m);
	tally_labels_unref(ls);
}

/* " (killed by signal N)", " (exit status N)" or, not reaped, " (still
 * running, killed)" of wait status @status (-1: not reaped) */
static void rocm_how(int status, char *how, size_t size)
{
	if (status >= 0 && WIFSIGNALED(status))
		snprintf(how, size, " (killed by signal %d)", WTERMSIG(status));
	else if (status >= 0 && WIFEXITED(status))
		snprintf(how, size, " (exit status %d)", WEXITSTATUS(status));
	else
		snprintf(how, size, " (did not exit in %d ms: killed)",
			 ROCM_GRACE_MS + ROCM_REAP_MS);
}

/* The helper failed us (@reason: "crashed" or "timeout"): kill, count,
 * log, restart later. */
static void rocm_lost(struct rocm_smi *r, const char *event, const char *drop,
		      const char *what)
{
	int status;
	char how[64] = "";

	if (r->state == ROCM_BUSY)
		tally_count_drop(r->inst, drop, 1);
	rocm_stop_helper(r, &status, strcmp(what, "died") ? 0 : ROCM_GRACE_MS);
	rocm_how(status, how, sizeof(how));
	tally_count_event(r->inst, event, 1);
	tally_log(r->inst, LOG_WARNING,
		  "helper %s%s: GPU metrics missing until it is restarted in "
		  "%.3g s%s%s",
		  what, how, r->backoff,
		  r->lastlib[0] ? "; the library said: " : "", r->lastlib);
	rocm_schedule_restart(r, r->backoff);
	r->backoff = r->backoff * 2 < r->max_backoff ? r->backoff * 2
						     : r->max_backoff;
}

static void rocm_send_read(struct rocm_smi *r);

static void rocm_skip_add(struct rocm_smi *r, const struct rocm_msg *m)
{
	struct rocm_skip *k = NULL;
	size_t len;

	for (unsigned i = 0; i < r->nskips && !k; i++)
		if (!strcmp(r->skips[i].metric, m->name) &&
		    !strcmp(r->skips[i].why, m->why))
			k = &r->skips[i];
	if (!k) {
		if (r->nskips == ROCM_MAX_SKIPS)
			return;
		k = &r->skips[r->nskips++];
		snprintf(k->metric, sizeof(k->metric), "%s", m->name);
		snprintf(k->why, sizeof(k->why), "%s", m->why);
		k->cards[0] = '\0';
	}
	len = strlen(k->cards);
	snprintf(k->cards + len, sizeof(k->cards) - len, "%s%d",
		 len ? ", " : "", m->card);
}

/* "not read: METRIC on card(s) N, M (WHY); ...", in lines that fit. */
static void rocm_skip_log(struct rocm_smi *r)
{
	char line[900];
	size_t len = 0;

	for (unsigned i = 0; i <= r->nskips; i++) {
		char one[400] = "";
		size_t n = 0;

		if (i < r->nskips)
			n = (size_t)snprintf(
				one, sizeof(one), "%s%s on card%s %s (%s)",
				len ? "; " : "", r->skips[i].metric,
				strchr(r->skips[i].cards, ',') ? "s" : "",
				r->skips[i].cards, r->skips[i].why);
		if (len && (i == r->nskips || len + n >= sizeof(line))) {
			tally_log(r->inst, LOG_INFO, "not read: %s", line);
			len = 0;
			if (i < r->nskips)
				n = (size_t)snprintf(
					one, sizeof(one),
					"%s on card%s %s (%s)",
					r->skips[i].metric,
					strchr(r->skips[i].cards, ',') ? "s"
								       : "",
					r->skips[i].cards, r->skips[i].why);
		}
		if (n >= sizeof(one))
			n = sizeof(one) - 1;
		memcpy(line + len, one, n + 1);
		len += n;
	}
	r->nskips = 0;
}

/* The state of card @card (< 4096, the parser's bound); NULL: no memory */
static struct rocm_card *rocm_card(struct rocm_smi *r, int card)
{
	if ((size_t)card >= r->ncards) {
		size_t n = (size_t)card + 1;
		struct rocm_card *c = realloc(r->cards, n * sizeof(*c));

		if (!c)
			return NULL;
		memset(c + r->ncards, 0, (n - r->ncards) * sizeof(*c));
		r->cards = c;
		r->ncards = n;
	}
	return &r->cards[card];
}

/*
 * What the parser cannot know of sample @m: whether its metric was asked
 * for (options), skipped at the probe on its card, or is already in this
 * read (one series per card, rocm_temperature_sensor_celsius one per card
 * and location). Return: ROCM_BAD_NONE, and @m is marked as seen, or why
 * the sample is dropped.
 */
static enum rocm_bad rocm_sample_check(struct rocm_smi *r,
				       const struct rocm_msg *m)
{
	int id = rocm_metric_find(m->name);
	struct rocm_card *c;
	uint64_t bit;

	if ((id >= ROCM_M_RAS && !r->ras) ||
	    (id == ROCM_M_POWER_CAP && !r->power_cap) ||
	    (id == ROCM_M_TEMP_SENSOR && !r->all_temps))
		return ROCM_BAD_UNREQUESTED;
	if (m->card < 0) {
		if (r->num_seen)
			return ROCM_BAD_DUPLICATE;
		r->num_seen = true;
		return ROCM_BAD_NONE;
	}
	c = rocm_card(r, m->card);
	if (!c)
		return ROCM_BAD_NONE; /* best effort: not checked */
	if (c->skipped & (UINT32_C(1) << id))
		return ROCM_BAD_SKIPPED;
	bit = id == ROCM_M_TEMP_SENSOR
		      ? UINT64_C(1) << (ROCM_SEEN_SENSOR +
					rocm_temp_location(m->val[0]))
		      : UINT64_C(1) << id;
	if (c->seen & bit)
		return ROCM_BAD_DUPLICATE;
	c->seen |= bit;
	return ROCM_BAD_NONE;
}

/*
 * A line the decoder refused (@m->bad): dropped, counted under its reason,
 * logged at most once a minute per reason with the line as it came
 * (@text, escaped).
 */
static void rocm_refused(struct rocm_smi *r, const struct rocm_msg *m,
			 const char *text)
{
	static const char *const what[ROCM_BAD_COUNT] = {
		[ROCM_BAD_MALFORMED] = "a malformed line",
		[ROCM_BAD_UTF8] = "a line that is not UTF-8 text",
		[ROCM_BAD_CARD] = "a line for a card it does not have",
		[ROCM_BAD_VALUE] = "a value that is not a finite number",
		[ROCM_BAD_TEMPERATURE] =
			"a temperature no GPU reads (a sensor's placeholder "
			"for no reading, at or below 0 or above 500 Celsius)",
		[ROCM_BAD_PERCENT] = "a percentage outside 0 to 100",
		[ROCM_BAD_NEGATIVE] = "a negative value of a metric that "
				      "cannot be negative",
		[ROCM_BAD_UNREQUESTED] = "a metric whose option is off",
		[ROCM_BAD_SKIPPED] = "a metric it said it skips on that card",
		[ROCM_BAD_DUPLICATE] = "a series it already sent in this read "
				       "(one per card, and location for "
				       "rocm_temperature_sensor_celsius)",
	};
	enum rocm_bad bad = m->bad > ROCM_BAD_NONE && m->bad < ROCM_BAD_COUNT
				    ? m->bad
				    : ROCM_BAD_MALFORMED;
	char esc[256];

	tally_count_drop(r->inst, rocm_bad_reason[bad], 1);
	tally_log_peer_text(esc, sizeof(esc), text, strlen(text));
	tally_log_limited(&r->bad_log[bad], ROCM_BAD_LOG_EVERY, r->inst,
			  LOG_WARNING,
			  "dropped %s from the helper (%u GPU(s)): \"%s\" "
			  "(counted as %s)",
			  what[bad], (unsigned)r->ngpus, esc,
			  rocm_bad_reason[bad]);
}

/*
 * A helper is ready (@m): "N GPU(s), ROCm SMI library V", logged at the
 * first, after a "fail", and when it changed (a new library after a
 * restart), never the old text for a new helper.
 */
static void rocm_announce(struct rocm_smi *r, const struct rocm_msg *m)
{
	char said[sizeof(r->announced)];

	snprintf(said, sizeof(said), "%llu GPU(s), ROCm SMI library %s",
		 (unsigned long long)m->n, m->name);
	if (strcmp(said, r->announced) || r->fail_logged[0])
		tally_log(r->inst, LOG_INFO, "%s", said);
	snprintf(r->announced, sizeof(r->announced), "%s", said);
}

/* The keyword of each line type, for the log */
static const char *const rocm_line_kw[] = {
	[ROCM_MSG_HELLO] = "hello", [ROCM_MSG_READY] = "ready",
	[ROCM_MSG_FAIL] = "fail",   [ROCM_MSG_SKIP] = "skip",
	[ROCM_MSG_SAMPLE] = "m",    [ROCM_MSG_END] = "end",
	[ROCM_MSG_NOTE] = "note",
};

/*
 * One line from the helper. Return: 0, or -1 when the helper must go
 * (protocol broken, or its "fail").
 */
static int rocm_line(struct rocm_smi *r, char *line)
{
	char text[ROCM_PROTO_LINE_MAX];
	struct rocm_msg m;

	if (!rocm_proto_keyword(line)) {
		/* not ours: the library wrote it (stdout and stderr) */
		tally_log_peer_text(r->lastlib, sizeof(r->lastlib), line,
				    strlen(line));
		tally_log(r->inst, LOG_DEBUG, "library: %s", r->lastlib);
		return 0;
	}
	/* parsing splits the line: keep it whole for the complaint */
	snprintf(text, sizeof(text), "%s", line);
	if (rocm_proto_parse(line, r->ngpus, &m) < 0) {
		rocm_refused(r, &m, text);
		return 0;
	}
	switch (m.type) {
	case ROCM_MSG_HELLO:
		if (m.n != ROCM_PROTO_VERSION) {
			tally_log(r->inst, LOG_ERR,
				  "helper %s speaks protocol %llu, not %d: "
				  "install the helper of this tallyd",
				  r->helper, (unsigned long long)m.n,
				  ROCM_PROTO_VERSION);
			return -1;
		}
		return 0;
	case ROCM_MSG_NOTE:
		tally_log(r->inst, LOG_INFO, "%s", m.name);
		return 0;
	case ROCM_MSG_SKIP: {
		struct rocm_card *c = rocm_card(r, m.card);

		if (c)
			c->skipped |= UINT32_C(1) << rocm_metric_find(m.name);
		rocm_skip_add(r, &m);
		return 0;
	}
	case ROCM_MSG_FAIL:
		if (strcmp(r->fail_logged, m.name)) {
			char again[64];

			tally_log(r->inst, LOG_WARNING,
				  "no GPU metrics: %s; %s", m.name,
				  rocm_again(r, again, sizeof(again)));
			snprintf(r->fail_logged, sizeof(r->fail_logged), "%s",
				 m.name);
		}
		r->state = ROCM_FAILED;
		return -1;
	case ROCM_MSG_READY:
		if (r->state != ROCM_STARTING)
			break;
		rocm_announce(r, &m);
		r->ngpus = (uint32_t)m.n;
		rocm_skip_log(r);
		r->fail_logged[0] = '\0';
		r->state = ROCM_READY;
		if (r->deadline)
			event_del(r->deadline);
		if (r->want_read)
			rocm_send_read(r);
		return 0;
	case ROCM_MSG_SAMPLE:
		if (r->state != ROCM_BUSY || !r->batch)
			break;
		m.bad = rocm_sample_check(r, &m);
		if (m.bad)
			rocm_refused(r, &m, text);
		else
			rocm_add_sample(r, &m);
		return 0;
	case ROCM_MSG_END:
		if (r->state != ROCM_BUSY)
			break;
		if (m.n)
			tally_count_event(r->inst, "query_errors", m.n);
		/* what the library said before a read that worked does not
		 * explain a later death: not quoted then */
		r->lastlib[0] = '\0';
		if (r->first_read)
			rocm_lost_check(r);
		r->state = ROCM_READY;
		r->backoff = 1.0;
		if (r->deadline)
			event_del(r->deadline);
		return 0;
	}
	/* a line out of its place: the helper is not ours, or broken */
	tally_count_drop(r->inst, "malformed", 1);
	snprintf(r->broke, sizeof(r->broke), "a \"%s\" line out of its place",
		 rocm_line_kw[m.type]);
	return -1;
}

/* Lines waiting in @in. Return: as rocm_line(); 1 at the end of a read. */
static int rocm_lines(struct rocm_smi *r, struct evbuffer *in)
{
	char *line;
	size_t len;

	for (;;) {
		struct evbuffer_ptr eol = evbuffer_search(in, "\n", 1, NULL);
		bool busy = r->state == ROCM_BUSY;
		int rc;

		/* the bound, '\n' included, before the line is copied */
		if (eol.pos < 0 ? evbuffer_get_length(in) >= ROCM_PROTO_LINE_MAX
				: (size_t)eol.pos + 1 > ROCM_PROTO_LINE_MAX) {
			tally_count_drop(r->inst, "line_too_long", 1);
			snprintf(r->broke, sizeof(r->broke),
				 "a line longer than %d bytes",
				 ROCM_PROTO_LINE_MAX);
			return -1;
		}
		line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
		if (!line)
			return 0;
		rc = rocm_line(r, line);
		free(line);
		if (rc < 0)
			return -1;
		if (busy && r->state == ROCM_READY)
			return 1;
	}
}

static void rocm_emit(struct rocm_smi *r)
{
	struct tally_batch *b = r->batch;

	r->batch = NULL;
	r->samples = 0;
	tally_emit(r->inst, b);
}

static void rocm_on_read(struct bufferevent *bev, void *arg)
{
	struct rocm_smi *r = arg;
	int rc = rocm_lines(r, bufferevent_get_input(bev));

	if (rc == 1) {
		rocm_emit(r);
		if (r->want_read)
			rocm_send_read(r);
	} else if (rc < 0) {
		if (r->state == ROCM_FAILED) {
			/* its exit is not a crash: ask again much later */
			rocm_stop_helper(r, NULL, ROCM_GRACE_MS);
			rocm_schedule_restart(r, r->max_backoff);
		} else {
			char what[96];

			snprintf(what, sizeof(what), "broke the protocol (%s)",
				 r->broke[0] ? r->broke : "?");
			rocm_lost(r, "helper_crashed", "helper_crashed", what);
		}
	}
}

static void rocm_on_event(struct bufferevent *bev, short what, void *arg)
{
	struct rocm_smi *r = arg;

	(void)bev;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	rocm_lost(r, "helper_crashed", "helper_crashed", "died");
}

static void rocm_on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct rocm_smi *r = arg;

	(void)fd;
	(void)what;
	rocm_lost(r, "helper_timeout", "helper_timeout",
		  r->state == ROCM_STARTING ? "did not start in time"
					    : "did not answer in time");
}

static void rocm_arm(struct rocm_smi *r, double seconds)
{
	struct timeval tv = tally_timeval(seconds);

	event_add(r->deadline, &tv);
}

/* A read starts: no series of it seen yet */
static void rocm_read_begins(struct rocm_smi *r)
{
	for (size_t i = 0; i < r->ncards; i++)
		r->cards[i].seen = 0;
	r->num_seen = false;
}

static void rocm_send_read(struct rocm_smi *r)
{
	r->want_read = false;
	if (!r->batch)
		r->batch = tally_batch_new();
	if (!r->batch) {
		tally_count_drop(r->inst, "nomem", 1);
		return;
	}
	r->samples = 0;
	rocm_read_begins(r);
	r->state = ROCM_BUSY;
	if (r->bev) {
		bufferevent_write(r->bev, "read\n", 5);
		rocm_arm(r, r->timeout);
	}
}

static void rocm_on_restart(evutil_socket_t fd, short what, void *arg)
{
	struct rocm_smi *r = arg;

	(void)fd;
	(void)what;
	rocm_reap(r);
	if (rocm_start_helper(r) < 0) {
		rocm_schedule_restart(r, r->max_backoff);
		return;
	}
	r->bev = bufferevent_socket_new(r->base, r->fd, BEV_OPT_CLOSE_ON_FREE);
	if (!r->bev) {
		rocm_stop_helper(r, NULL, 0);
		rocm_schedule_restart(r, r->max_backoff);
		return;
	}
	bufferevent_setcb(r->bev, rocm_on_read, NULL, rocm_on_event, r);
	bufferevent_enable(r->bev, EV_READ);
	rocm_arm(r, r->timeout + ROCM_START_EXTRA);
}

static void rocm_schedule_restart(struct rocm_smi *r, double delay)
{
	struct timeval tv = tally_timeval(delay);

	r->state = ROCM_OFF;
	if (r->restart)
		event_add(r->restart, &tv);
}

static int rocm_check(struct tally_instance *inst, void *state)
{
	struct rocm_smi *r = state;
	const char *why = NULL;
	struct stat st;

	if (r->timeout == 0) {
		r->timeout = tally_instance_interval(inst) / 2;
		if (r->timeout > ROCM_DEFAULT_TIMEOUT)
			r->timeout = ROCM_DEFAULT_TIMEOUT;
	}
	if (r->timeout >= tally_instance_interval(inst)) {
		tally_log(inst, LOG_ERR,
			  "timeout (%.3g s) must be shorter than the interval "
			  "(%.3g s)",
			  r->timeout, tally_instance_interval(inst));
		return -1;
	}
	if (r->helper[0] != '/') {
		tally_log(inst, LOG_ERR,
			  "helper: an absolute path is needed, "
			  "not \"%s\"",
			  r->helper);
		return -1;
	}
	if (stat(r->helper, &st) < 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (access(r->helper, X_OK) < 0)
		why = strerror(errno);
	if (why) {
		tally_log(inst, LOG_ERR,
			  "helper %s: %s (is tally installed whole?)",
			  r->helper, why);
		return -1;
	}
	if (!r->library[0]) {
		tally_log(inst, LOG_ERR,
			  "library: empty; a library name (\"%s\") or an "
			  "absolute path is needed",
			  "librocm_smi64.so.1");
		return -1;
	}
	/* the helper's working directory is not the one tally.conf was
	 * written for, and dlopen() would search a relative path from it */
	if (strchr(r->library, '/') && r->library[0] != '/') {
		tally_log(inst, LOG_ERR,
			  "library: \"%s\" is a relative path, which the "
			  "helper would look up from its own working "
			  "directory: give an absolute path, or a bare "
			  "library name the loader searches (\"%s\")",
			  r->library, "librocm_smi64.so.1");
		return -1;
	}
	return 0;
}

static int rocm_init(struct tally_instance *inst, void *state)
{
	struct rocm_smi *r = state;

	r->inst = inst;
	r->fd = -1;
	r->backoff = 1.0;
	return 0;
}

static int rocm_start(struct tally_instance *inst, void *state,
		      struct event_base *base)
{
	struct rocm_smi *r = state;

	(void)inst;
	r->base = base;
	r->deadline = evtimer_new(base, rocm_on_deadline, r);
	r->restart = evtimer_new(base, rocm_on_restart, r);
	if (!r->deadline || !r->restart) {
		errno = ENOMEM;
		return -1;
	}
	/*
	 * The first helper now, not from the loop: start is the plugin's
	 * set-up, done before tallyd gives up root (global.user), so the
	 * first helper reads what root may read.
	 */
	rocm_on_restart(-1, 0, r);
	return 0;
}

/*
 * --once: the whole exchange here, with poll() for the deadlines (there is
 * no loop yet, and nothing else to serve).
 */
static int rocm_read_sync(struct rocm_smi *r, struct tally_batch *out)
{
	struct evbuffer *in = evbuffer_new();
	int64_t deadline;
	int status;
	bool sent = false;
	const char *lost = NULL;

	if (!in || rocm_start_helper(r) < 0) {
		evbuffer_free(in);
		return 0;
	}
	r->req_ns = tally_now_ns();
	deadline = tally_monotonic_ns() +
		   (int64_t)((r->timeout + ROCM_START_EXTRA) * 1e9);
	for (;;) {
		struct pollfd p = { .fd = r->fd, .events = POLLIN };
		int64_t left = deadline - tally_monotonic_ns();
		int rc;

		if (left <= 0) {
			lost = "helper_timeout";
			break;
		}
		if (poll(&p, 1, (int)(left / 1000000 + 1)) < 0 &&
		    errno != EINTR)
			break;
		if (!p.revents)
			continue;
		if (evbuffer_read(in, r->fd, 4096) <= 0) {
			lost = "helper_crashed";
			break;
		}
		rc = rocm_lines(r, in);
		if (rc == 1 || rc < 0) {
			if (rc < 0 && r->state != ROCM_FAILED)
				lost = "helper_crashed";
			break;
		}
		if (!sent && r->state == ROCM_READY) {
			r->batch = tally_batch_ref(out);
			rocm_read_begins(r);
			r->state = ROCM_BUSY;
			sent = true;
			if (write(r->fd, "read\n", 5) != 5) {
				lost = "helper_crashed";
				break;
			}
			deadline = tally_monotonic_ns() +
				   (int64_t)(r->timeout * 1e9);
		}
	}
	evbuffer_free(in);
	status = -1;
	rocm_stop_helper(r, &status,
			 lost && !strcmp(lost, "helper_timeout") ? 0
								 : ROCM_GRACE_MS);
	if (lost) {
		char how[64] = "", what[96] = "died";

		if (strcmp(lost, "helper_timeout"))
			rocm_how(status, how, sizeof(how));
		tally_count_drop(r->inst, lost, 1);
		tally_count_event(r->inst, lost, 1);
		if (!strcmp(lost, "helper_timeout"))
			snprintf(what, sizeof(what), "did not answer in time");
		else if (r->broke[0])
			snprintf(what, sizeof(what), "broke the protocol (%s)",
				 r->broke);
		tally_log(r->inst, LOG_WARNING,
			  "helper %s%s: no GPU metrics%s%s", what, how,
			  r->lastlib[0] ? "; the library said: " : "",
			  r->lastlib);
	}
	r->state = ROCM_OFF;
	return 0;
}

static int rocm_read(struct tally_instance *inst, void *state,
		     struct tally_batch *out)
{
	struct rocm_smi *r = state;

	(void)inst;
	rocm_reap(r);
	if (!r->base)
		return rocm_read_sync(r, out);
	switch (r->state) {
	case ROCM_READY:
		r->req_ns = tally_now_ns();
		rocm_send_read(r);
		break;
	case ROCM_STARTING:
		r->req_ns = tally_now_ns();
		r->want_read = true;
		break;
	case ROCM_BUSY:
		/* the deadline is shorter than the interval: not reached */
		tally_count_drop(inst, "read_overrun", 1);
		break;
	default:
		break;
	}
	return 0;
}

static void rocm_stop(struct tally_instance *inst, void *state)
{
	struct rocm_smi *r = state;

	(void)inst;
	if (r->restart)
		event_del(r->restart);
	/*
	 * EOF on its socket ends the helper; after the privilege drop tallyd
	 * may not kill the first one (root's), so it is given that time.
	 */
	rocm_stop_helper(r, NULL, ROCM_GRACE_MS);
	r->state = ROCM_OFF;
}

static void rocm_fini(struct tally_instance *inst, void *state)
{
	struct rocm_smi *r = state;

	rocm_stop(inst, state);
	rocm_reap(r);
	if (r->deadline)
		event_free(r->deadline);
	if (r->restart)
		event_free(r->restart);
	r->deadline = r->restart = NULL;
	rocm_keys_free(&r->base_keys, &r->nbase);
	rocm_keys_free(&r->cur_keys, &r->ncur);
	free(r->cards);
	r->cards = NULL;
	r->ncards = 0;
}

/*
 * A reload replaces the instance (an option changed): the successor's
 * helper starts after the privilege drop, so it compares its first read
 * with what the first helper of this instance read, as a restart does.
 */
static void *rocm_handoff(struct tally_instance *inst, void *state, int next)
{
	struct rocm_smi *r = state;
	struct rocm_handed *h;

	(void)inst;
	if (!next || !r->helpers_ready || !r->nbase)
		return NULL;
	h = malloc(sizeof(*h));
	if (!h)
		return NULL; /* best effort: the successor starts afresh */
	h->keys = r->base_keys;
	h->n = r->nbase;
	r->base_keys = NULL;
	r->nbase = 0;
	return h;
}

static void rocm_discard(void *handed)
{
	struct rocm_handed *h = handed;

	rocm_keys_free(&h->keys, &h->n);
	free(h);
}

/* Whether options of @r read the metric of key @k at all. */
static bool rocm_key_wanted(const struct rocm_smi *r, const char *k)
{
	if (!r->ras && !strncmp(k, "rocm_ras_", 9))
		return false;
	if (!r->power_cap && !strncmp(k, "rocm_power_cap_watts ", 21))
		return false;
	if (!r->all_temps &&
	    !strncmp(k, "rocm_temperature_sensor_celsius ", 32))
		return false;
	return true;
}

static int rocm_adopt(struct tally_instance *inst, void *state, void *handed)
{
	struct rocm_smi *r = state;
	struct rocm_handed *h = handed;
	size_t k = 0;

	(void)inst;
	for (size_t i = 0; i < h->n; i++) {
		if (rocm_key_wanted(r, h->keys[i]))
			h->keys[k++] = h->keys[i];
		else
			free(h->keys[i]);
	}
	rocm_keys_free(&r->base_keys, &r->nbase);
	r->base_keys = h->keys;
	r->nbase = k;
	r->helpers_ready = 1;
	r->adopted = true;
	free(h);
	return 0;
}

static const struct tally_option rocm_options[] = {
	TALLY_OPT_STRING("library", struct rocm_smi, library,
			 "librocm_smi64.so.1",
			 "ROCm SMI library the helper loads (a site's newer "
			 "one: /opt/rocm/lib/librocm_smi64.so.1)"),
	TALLY_OPT_STRING("helper", struct rocm_smi, helper,
			 TALLY_LIBEXECDIR "/tally-rocm-helper",
			 "the helper program that runs the library"),
	TALLY_OPT_DURATION("timeout", struct rocm_smi, timeout, "0", 0, 3600,
			   "a read not answered by then kills the helper; "
			   "shorter than the interval (0: half of it, at most "
			   "2 s)"),
	TALLY_OPT_DURATION("max_backoff", struct rocm_smi, max_backoff, "60s",
			   0.1, 86400,
			   "longest wait before a new helper, and between "
			   "tries without GPU"),
	TALLY_OPT_BOOL("ras", struct rocm_smi, ras, "false",
		       "ECC error counts per block "
		       "(rocm_ras_<block>_{correctable,uncorrectable}_count)"),
	TALLY_OPT_BOOL("power_cap", struct rocm_smi, power_cap, "false",
		       "rocm_power_cap_watts"),
	TALLY_OPT_BOOL("all_temperatures", struct rocm_smi, all_temps, "false",
		       "every temperature sensor that reads, as "
		       "rocm_temperature_sensor_celsius{location} (Omnistat's "
		       "two families keep one sensor each)"),
	TALLY_OPT_END
};

static const struct tally_input_ops rocm_ops = {
	.check = rocm_check,
	.init = rocm_init,
	.read = rocm_read,
	.start = rocm_start,
	.stop = rocm_stop,
	.fini = rocm_fini,
	.handoff = rocm_handoff,
	.adopt = rocm_adopt,
	.discard = rocm_discard,
	/* it reads every GPU of the node: two would write every series twice */
	.flags = TALLY_INPUT_ONCE,
};

TALLY_PLUGIN_INPUT(
	rocm_smi, "AMD GPU metrics from librocm_smi64, run in a helper process",
	struct rocm_smi, rocm_options, &rocm_ops);

/* SPDX-License-Identifier: MIT */
/*
 * tally/log.h - logging and drop accounting
 *
 * Log lines go to stderr or syslog (global.log in the config). Every line a
 * plugin logs carries its plugin and instance name automatically:
 *     procfs[host]: open /proc/stat: Permission denied
 * Messages are one greppable string with no trailing period.
 *
 * A message logged again and again in a burst (same instance, same format
 * string) is rate-limited: a few per window pass, the rest are counted and
 * reported later as one "suppressed N similar messages" line. The core's
 * own lines (@inst NULL) below LOG_WARNING are never limited.
 *
 * Thread-safety: all functions here may be called from any thread.
 */
#ifndef TALLY_LOG_H
#define TALLY_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h> /* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */

#ifdef __cplusplus
extern "C" {
#endif

struct tally_instance;

/**
 * tally_log() - log a message for an instance
 * @inst: the instance (prefix "plugin[name]: "), or NULL for the core
 * @prio: syslog priority, LOG_ERR .. LOG_DEBUG
 * @fmt:  printf format
 *
 * Messages above the configured level are discarded cheaply.
 */
void tally_log(const struct tally_instance *inst, int prio, const char *fmt,
	       ...) __attribute__((format(printf, 3, 4)));

/**
 * tally_log_about() - tally_log() for a complaint about one of many subjects
 * @about: the subject (a file's path, a peer's address), NUL-terminated;
 *         not kept
 * @inst, @prio, @fmt: as tally_log()
 *
 * The burst limit applies per (@inst, @fmt, @about) rather than per
 * (@inst, @fmt): a complaint about a sixth file is not suppressed because
 * five others were just named, and a suppressed-lines summary is about
 * one subject. For complaints the caller already limits per subject (the
 * textfile input logs a file once per version of it); the limit still
 * stops one subject flooding the log. Any thread.
 */
void tally_log_about(const struct tally_instance *inst, int prio,
		     const char *about, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/** tally_vlog() - va_list form of tally_log() */
void tally_vlog(const struct tally_instance *inst, int prio, const char *fmt,
		va_list ap) __attribute__((format(printf, 3, 0)));

/**
 * tally_count_drop() - count dropped items, by reason, for self-metrics
 * @inst:   the instance that dropped them (NULL: counted for the core)
 * @reason: short snake_case reason with static storage duration, e.g.
 *          "malformed", "queue_full", "truncated"; the pointer is kept
 * @n:      number of items dropped
 *
 * Every drop in tally is counted here; the self input exports the totals as
 * tally_dropped_total{instance, reason}. At most 32 reasons per instance;
 * beyond that they are counted under "other".
 */
void tally_count_drop(struct tally_instance *inst, const char *reason,
		      uint64_t n);

/**
 * tally_count_event() - count something that is not a drop, for self-metrics
 * @inst:  the instance (NULL: counted for the core)
 * @event: short snake_case name with static storage duration, e.g.
 *         "messages_received", "wakeups"; the pointer is kept
 * @n:     how many
 *
 * Exported by the self input as tally_events_total{instance, event}.
 * Same limits as tally_count_drop(). Any thread.
 */
void tally_count_event(struct tally_instance *inst, const char *event,
		       uint64_t n);

/**
 * struct tally_log_limit - state of one repeated complaint, for
 * tally_log_limited(); zero-initialize, one per complaint and instance
 * @next_ns: CLOCK_MONOTONIC time before which the complaint is not logged
 * @quiet:   occurrences not logged since the last line
 */
struct tally_log_limit {
	int64_t next_ns;
	uint64_t quiet;
};

/**
 * tally_log_limited() - log a complaint at most once per @every seconds
 * @l:     its state
 * @every: seconds between two lines (the first occurrence is logged)
 * @inst, @prio, @fmt: as tally_log()
 *
 * For a failure that recurs on every flush or interval while it lasts (a
 * server refusing every write, a datagram nobody receives): the first
 * line says it, the next ones, @every seconds apart, add how many times
 * it happened meanwhile. What each occurrence drops is counted by the
 * caller as always. Same thread rules as the state's owner.
 */
void tally_log_limited(struct tally_log_limit *l, double every,
		       const struct tally_instance *inst, int prio,
		       const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/**
 * tally_log_peer_text() - make text a peer sent fit for one log line
 * @dst:    the result, always NUL-terminated
 * @dstlen: its size; the result is cut to fit, "..." marking the cut
 * @src:    the peer's bytes (a server's error message), not trusted
 * @len:    their number (NUL bytes included)
 *
 * A server's answer goes into a log line as it came would let it forge
 * lines (a newline), drive the terminal (ESC) or hide the rest (NUL).
 * Control characters (0x00-0x1f, 0x7f) become \n, \r, \t or \xHH (a
 * backslash stays as it is); so does every byte that is not part of a
 * well-formed UTF-8 character (tally_utf8_seq()), so that the log stays
 * UTF-8 whatever the peer sent. Well-formed characters are copied whole:
 * a cut never splits one. Leading and trailing white space is left out.
 * Any thread.
 * Return: the length of @dst.
 */
size_t tally_log_peer_text(char *dst, size_t dstlen, const char *src,
			   size_t len);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_LOG_H */

/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/self.c - tally's own health: per-instance counters, drops
 * by reason, queue depths, and the process's CPU time and memory
 *
 * Process metrics use the names of the Prometheus client libraries'
 * standard process collector (process_cpu_seconds_total,
 * process_resident_memory_bytes, process_start_time_seconds), so existing
 * dashboards recognise them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/plugin.h>
#include <tally/stats.h>

struct self {
	int stat_fd;		/* /proc/self/stat, kept open */
	int statm_fd;		/* /proc/self/statm, kept open */
	double start_time;	/* seconds since the epoch */
	struct tally_batch *out;	/* the batch of the running read */
	int64_t now;
};

static const char *const self_kinds[] = { "core", "input", "filter",
					  "output" };

/* Read a small /proc file from offset 0 into @buf; -1/errno on failure. */
static ssize_t self_pread(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static int self_init(struct tally_instance *inst, void *state)
{
	struct self *s = state;

	s->stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	s->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	if (s->stat_fd < 0 || s->statm_fd < 0)
		tally_log(inst, LOG_WARNING,
			  "cannot open /proc/self: %s; process metrics off",
			  strerror(errno));
	s->start_time = (double)tally_now_ns() / 1e9;
	return 0;
}

static void self_metric(struct self *s, enum tally_metric_type type,
			const char *name, const char *help,
			struct tally_labels *ls, double v)
{
	if (tally_batch_add_metric(s->out, type, name, help, ls, v, s->now) < 0)
		tally_count_drop(NULL, "nomem", 1);
}

/* One counter per entry of a by-name table, labelled @key = its name. */
static void self_table(struct self *s, struct tally_labels *ls,
		       const char *name, const char *help, const char *key,
		       const struct tally_stats_drop *tab, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct tally_labels *l = tally_labels_with(ls, key,
							   tab[i].reason);

		if (!l)
			continue;
		self_metric(s, TALLY_COUNTER, name, help, l, (double)tab[i].n);
		tally_labels_unref(l);
	}
}

/* tally_dropped_by_key_total: one counter per (reason, key) of @st. */
static void self_keyed(struct self *s, struct tally_labels *ls,
		       const struct tally_instance_stats *st)
{
	for (size_t i = 0; i < st->nkeyed; i++) {
		const struct tally_stats_keyed_drop *k = &st->keyed[i];
		struct tally_labels *r, *l;

		r = tally_labels_with(ls, "reason", k->reason);
		l = r ? tally_labels_with(r, "key", k->key) : NULL;
		tally_labels_unref(r);
		if (!l)
			continue;
		self_metric(s, TALLY_COUNTER, "tally_dropped_by_key_total",
			    "Items dropped, by instance, reason and key (the "
			    "source they came from; at most 64 keys, the rest "
			    "under key=\"other\")",
			    l, (double)k->n);
		tally_labels_unref(l);
	}
}

static int self_instance(const struct tally_instance_stats *st, void *arg)
{
	struct self *s = arg;
	const char *kind = self_kinds[st->kind >= 0 && st->kind <= 3 ? st->kind
								    : 0];
	struct tally_labels *ls;

	ls = st->pipeline ? tally_labels_newv("instance", st->name, "plugin",
					      st->plugin, "kind", kind,
					      "pipeline", st->pipeline, NULL)
			  : tally_labels_newv("instance", st->name, "plugin",
					      st->plugin, "kind", kind, NULL);
	if (!ls)
		return 0;
	if (st->kind == TALLY_KIND_FILTER || st->kind == TALLY_KIND_OUTPUT)
		self_metric(s, TALLY_COUNTER, "tally_records_in_total",
			    "Records received by the instance", ls,
			    (double)st->records_in);
	if (st->kind)
		self_metric(s, TALLY_COUNTER, "tally_records_out_total",
			    "Records emitted (inputs, filters) or written "
			    "(outputs)",
			    ls, (double)st->records_out);
	if (st->kind == TALLY_KIND_INPUT && st->reads) {
		self_metric(s, TALLY_COUNTER, "tally_reads_total",
			    "Periodic reads completed", ls, (double)st->reads);
		self_metric(s, TALLY_COUNTER, "tally_read_seconds_total",
			    "Wall time spent in periodic reads", ls,
			    st->read_seconds);
	}
	if (st->kind == TALLY_KIND_OUTPUT) {
		self_metric(s, TALLY_GAUGE, "tally_queue_batches",
			    "Batches waiting in the output's queue", ls,
			    (double)st->queue_len);
		self_metric(s, TALLY_GAUGE, "tally_queue_capacity_batches",
			    "Capacity of the output's queue", ls,
			    (double)st->queue_cap);
		self_metric(s, TALLY_GAUGE, "tally_queue_records",
			    "Records in the batches waiting in the output's "
			    "queue",
			    ls, (double)st->queue_records);
		self_metric(s, TALLY_GAUGE, "tally_queue_capacity_records",
			    "Capacity of the output's queue in records", ls,
			    (double)st->queue_records_cap);
	}
	self_table(s, ls, "tally_dropped_total",
		   "Items dropped, by instance and reason", "reason", st->drops,
		   st->ndrops);
	self_keyed(s, ls, st);
	self_table(s, ls, "tally_events_total",
		   "Events counted by the instance (messages received, "
		   "wake-ups...), by name",
		   "event", st->events, st->nevents);
	tally_labels_unref(ls);
	return 0;
}

static void self_process(struct self *s)
{
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long ut, st, size, rss;
	char buf[1024], *p;

	if (s->stat_fd >= 0 && self_pread(s->stat_fd, buf, sizeof(buf)) > 0 &&
	    (p = strrchr(buf, ')')) &&
	    /* fields 14 and 15 (utime, stime) counted from the pid */
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu "
			  "%llu",
		   &ut, &st) == 2 &&
	    tck > 0)
		self_metric(s, TALLY_COUNTER, "process_cpu_seconds_total",
			    "User and system CPU time of tallyd", NULL,
			    (double)(ut + st) / (double)tck);
	if (s->statm_fd >= 0 &&
	    self_pread(s->statm_fd, buf, sizeof(buf)) > 0 &&
	    sscanf(buf, "%llu %llu", &size, &rss) == 2) {
		self_metric(s, TALLY_GAUGE, "process_resident_memory_bytes",
			    "Resident set size of tallyd", NULL,
			    (double)rss * (double)page);
		self_metric(s, TALLY_GAUGE, "process_virtual_memory_bytes",
			    "Virtual memory size of tallyd", NULL,
			    (double)size * (double)page);
	}
	self_metric(s, TALLY_GAUGE, "process_start_time_seconds",
		    "Start time of tallyd's collection, seconds since the "
		    "epoch",
		    NULL, s->start_time);
}

static int self_read(struct tally_instance *inst, void *state,
		     struct tally_batch *out)
{
	struct self *s = state;
	struct tally_labels *ls;

	s->out = out;
	s->now = tally_now_ns();
	ls = tally_labels_newv("version", PACKAGE_VERSION, NULL);
	self_metric(s, TALLY_INFO, "tally_build_info",
		    "tallyd version, value 1", ls, 1);
	tally_labels_unref(ls);
	self_process(s);
	tally_stats_foreach(self_instance, s);
	s->out = NULL;
	return 0;
}

static void self_fini(struct tally_instance *inst, void *state)
{
	struct self *s = state;

	if (s->stat_fd >= 0)
		close(s->stat_fd);
	if (s->statm_fd >= 0)
		close(s->statm_fd);
}

static const struct tally_option self_options[] = {
	TALLY_OPT_END,
};

static const struct tally_input_ops self_ops = {
	.init = self_init,
	.read = self_read,
	.fini = self_fini,
};

TALLY_PLUGIN_INPUT(self, "tallyd's own counters: records, drops, queues, CPU, memory",
		   struct self, self_options, &self_ops);

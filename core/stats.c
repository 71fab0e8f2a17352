/* SPDX-License-Identifier: MIT */
/*
 * core/stats.c - self-metrics: a snapshot of each instance's counters, for
 * the self input (tally/stats.h)
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/stats.h>

#include "core-internal.h"

void tally_inst_stats(const struct tally_instance *inst,
		      struct tally_instance_stats *st)
{
	struct tally_instance *mut = (struct tally_instance *)inst;

	memset(st, 0, sizeof(*st));
	st->name = inst->name;
	st->plugin = inst->plugin ? inst->plugin->name : "core";
	st->kind = inst->plugin ? (int)inst->plugin->kind : 0;
	st->pipeline = inst->pipe ? inst->pipe->name : NULL;
	st->queue_len = inst->q.len;
	st->queue_cap = inst->q.cap;
	/* what the output accepted and still holds (a request retried) too */
	st->queue_records = inst->q.records + inst->q.held;
	st->queue_records_cap = inst->q.max_records;
	pthread_mutex_lock(&mut->stat_lock);
	st->records_in = inst->records_in;
	st->records_out = inst->records_out;
	st->reads = inst->reads;
	st->read_seconds = (double)inst->read_ns / 1e9;
	st->ndrops = inst->ndrops;
	memcpy(st->drops, inst->drops, inst->ndrops * sizeof(st->drops[0]));
	st->nevents = inst->nevents;
	memcpy(st->events, inst->events,
	       inst->nevents * sizeof(st->events[0]));
	if (inst->keyed) {
		const struct tally_keyed_drops *kd = inst->keyed;

		for (size_t i = 0; i < kd->n; i++) {
			struct tally_stats_keyed_drop *k =
				&st->keyed[st->nkeyed++];

			k->reason = kd->e[i].reason;
			memcpy(k->key, kd->e[i].key, sizeof(k->key));
			k->n = kd->e[i].n;
		}
		for (size_t i = 0; i < kd->nother; i++) {
			struct tally_stats_keyed_drop *k =
				&st->keyed[st->nkeyed++];

			k->reason = kd->other[i].reason;
			strcpy(k->key, "other");
			k->n = kd->other[i].n;
		}
	}
	pthread_mutex_unlock(&mut->stat_lock);
}

int tally_stats_foreach(int (*cb)(const struct tally_instance_stats *st,
				  void *arg),
			void *arg)
{
	struct tally_core *core = tally_core_current();
	struct tally_instance_stats st;
	int r;

	if (!core) {
		errno = ENODEV;
		return -1;
	}
	tally_inst_stats(&core->core_inst, &st);
	r = cb(&st, arg);
	for (size_t i = 0; i < core->ninsts && !r; i++) {
		tally_inst_stats(core->insts[i], &st);
		r = cb(&st, arg);
	}
	return r;
}


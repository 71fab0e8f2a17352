/* SPDX-License-Identifier: MIT */
/*
 * core/instance.c - instances: made from a declaration, checked, and
 * initialized, and the accessors of the public handle (tally/plugin.h)
 *
 * An instance is made the same way for --check-config (checked, then
 * freed) and for running (checked, initialized, then started by the core:
 * tally_inst_start()). Loop thread only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core-internal.h"

/* Accessors of the public instance handle (tally/plugin.h). */

const char *tally_instance_name(const struct tally_instance *inst)
{
	return inst->name;
}

const char *tally_instance_plugin(const struct tally_instance *inst)
{
	return inst->plugin ? inst->plugin->name : "core";
}

bool tally_tick_is_last(const struct tally_instance *inst)
{
	return inst->last_tick;
}

bool tally_tick_hands_off(const struct tally_instance *inst)
{
	return inst->last_tick && inst->hands_off;
}

double tally_instance_interval(const struct tally_instance *inst)
{
	return inst->interval;
}

struct event_base *tally_instance_base(const struct tally_instance *inst)
{
	return inst->core ? inst->core->base : NULL;
}

struct tally_labels *tally_output_labels(const struct tally_instance *inst)
{
	return inst->static_labels ? inst->static_labels : tally_labels_empty();
}

/* global.labels, the output's labels and its host label, composed once */
static int output_labels_init(struct tally_instance *o,
			      const struct tally_conf *conf,
			      const struct tally_conf_decl *d)
{
	const char *key = o->plugin->output->host_label;
	char host[256] = "";

	if (key && gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	o->static_labels =
		tally_static_labels(conf->labels, d->labels, key, host);
	return o->static_labels ? 0 : -1;
}

int tally_instance_set_emits(struct tally_instance *inst, unsigned forms)
{
	if (!inst || !inst->plugin || inst->plugin->kind != TALLY_KIND_INPUT ||
	    (forms & ~inst->plugin->input->emits)) {
		errno = EINVAL;
		return -1;
	}
	if (inst->decl)
		inst->decl->emits = forms;
	return 0;
}

static int inst_check(struct tally_instance *inst)
{
	int (*check)(struct tally_instance *, void *) =
		PLUGIN_OP(inst->plugin, check);

	return check ? check(inst, inst->state) : 0;
}

/* Instances */

/*
 * What every instance has, running or only checked: name, @label for its
 * log lines, interval, where it is declared, and its plugin state with
 * the options filled in. NULL with errno EINVAL (options refused: logged,
 * *@problems counts them) or ENOMEM.
 */
static struct tally_instance *inst_alloc(struct tally_core *core,
					 struct tally_conf *conf,
					 struct tally_conf_decl *d,
					 const char *label,
					 unsigned *problems)
{
	struct tally_instance *inst = calloc(1, sizeof(*inst));

	if (!inst)
		return NULL;
	inst->plugin = d->plugin;
	inst->core = core;
	inst->decl = d;
	inst->name = strdup(d->name);
	inst->label = strdup(label);
	inst->state = calloc(1, d->plugin->state_size ? d->plugin->state_size
						      : 1);
	pthread_mutex_init(&inst->stat_lock, NULL);
	if (!inst->name || !inst->label || !inst->state)
		goto out_free;
	inst->interval = d->interval > 0 ? d->interval : conf->interval;
	inst->cfile = d->file;
	inst->cline = d->line;
	*problems = tally_options_fill(d, inst->state);
	if (*problems) {
		tally_inst_free(inst);
		errno = EINVAL;
		return NULL;
	}
	return inst;
out_free:
	tally_inst_free(inst);
	errno = ENOMEM;
	return NULL;
}

int tally_inst_check(struct tally_conf *conf, struct tally_conf_decl *d,
		     unsigned *problems)
{
	struct tally_instance *inst;
	char label[256];
	int ret;

	/* named as the configuration names it: "inputs.host" */
	snprintf(label, sizeof(label), "%s.%s", tally_kind_section(d->kind),
		 d->name);
	*problems = 0;
	inst = inst_alloc(NULL, conf, d, label, problems);
	if (!inst)
		return -1;
	/* what check logs carries the file:line */
	inst->setup = true;
	ret = inst_check(inst);
	/* what it binds, for the clash check across instances */
	tally_conf_binds_add(conf, d, label, inst->state);
	tally_inst_free(inst);
	if (ret < 0) {
		*problems = 1;
		errno = EINVAL;
	}
	return ret < 0 ? -1 : 0;
}

struct tally_instance *tally_inst_new(struct tally_core *core,
				      struct tally_conf *conf,
				      struct tally_conf_decl *d,
				      const char *pipe_name)
{
	struct tally_instance *inst;
	unsigned problems;
	char label[256];

	if (pipe_name)
		snprintf(label, sizeof(label), "%s[%s@%s]", d->plugin->name,
			 d->name, pipe_name);
	else
		snprintf(label, sizeof(label), "%s[%s]", d->plugin->name,
			 d->name);
	inst = inst_alloc(core, conf, d, label, &problems);
	if (!inst)
		return NULL;
	inst->generation = core->generation;
	if (d->kind == TALLY_KIND_OUTPUT) {
		if (tally_outq_init(inst, (size_t)d->queue_size,
				    (size_t)d->queue_records) < 0 ||
		    output_labels_init(inst, conf, d) < 0)
			goto out_free;
	}
	return inst;
out_free:
	tally_inst_free(inst);
	errno = ENOMEM;
	return NULL;
}

int tally_inst_init(struct tally_instance *inst)
{
	int (*init)(struct tally_instance *, void *) =
		PLUGIN_OP(inst->plugin, init);
	int ret = 0;

	/* set-up: what check and init log carries the file:line */
	inst->setup = true;
	if (inst_check(inst) < 0) {
		errno = EINVAL;
		ret = -1;
	} else if (init && init(inst, inst->state) < 0) {
		tally_log(inst, LOG_ERR, "init failed: %s", strerror(errno));
		ret = -1;
	}
	inst->setup = false;
	inst->initialized = ret == 0;
	return ret;
}

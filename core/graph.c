/* SPDX-License-Identifier: MIT */
/*
 * core/graph.c - the running graph made from a configuration, at start and
 * again on SIGHUP
 *
 * A reload keeps what did not change. An input or output whose declaration
 * reads the same in the new configuration goes on running with its state:
 * open spans, Prometheus series and listeners, an output's queue, timers
 * on their marks. A pipeline whose filters read the same keeps its filter
 * instances (and what they aggregated). Everything else is stopped,
 * flushed and replaced, and batches still queued for a replaced output
 * are handed to its successor of the same name, as is the state of a
 * replaced input that hands it over (zmq_trace: its open spans, which
 * would otherwise stay open for ever in the outputs that saw them begin). So a
 * reload that adds a pipeline costs the running ones nothing, and scrapes of an
 * unchanged prometheus output see no gap.
 *
 * The new configuration is validated whole (tally_conf_load runs the
 * plugins' checks) before anything is touched; an invalid one leaves the
 * daemon as it was. What no check can foresee (a port taken since) fails
 * in init, after the replaced instances are gone: the old configuration
 * is then applied again the same way, so the daemon ends up running it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/log.h>

#include "core-internal.h"

/* A graph under construction: its instances, then its pipelines. */
struct graph {
	struct tally_instance **insts;
	size_t ninsts;
	struct tally_pipeline *pipes;
	size_t npipes;
};

/* Batches taken from a replaced output, for its successor. */
struct handover {
	char *name;
	struct tally_batch **v;
	size_t n;
};

/*
 * What a retired input or filter handed over (its handoff op), for its
 * successor: the instance of the same label ("plugin[name]", a filter's
 * "plugin[name@pipeline]") and plugin.
 */
struct handoff {
	char *label;
	const struct tally_plugin *plugin;
	void *p;
};

struct handovers {
	struct handover *v;
	size_t n;
	struct handoff *in;
	size_t nin;
};

static int graph_add(struct graph *g, struct tally_instance *inst)
{
	struct tally_instance **v;

	v = realloc(g->insts, (g->ninsts + 1) * sizeof(*v));
	if (!v)
		return -1;
	g->insts = v;
	g->insts[g->ninsts++] = inst;
	return 0;
}

static struct tally_instance *graph_find(const struct graph *g,
					 const char *name)
{
	for (size_t i = 0; i < g->ninsts; i++) {
		if (g->insts[i]->plugin->kind != TALLY_KIND_FILTER &&
		    !strcmp(g->insts[i]->name, name))
			return g->insts[i];
	}
	return NULL;
}

static void graph_free_pipes(struct tally_pipeline *pipes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(pipes[i].filters);
		free(pipes[i].outputs);
	}
	free(pipes);
}

/* The running input or output @d can keep being, or NULL. */
static struct tally_instance *graph_reusable(struct tally_core *core,
					     struct tally_conf *conf,
					     struct tally_conf_decl *d)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *inst = core->insts[i];

		if (inst->plugin->kind != TALLY_KIND_FILTER &&
		    !strcmp(inst->name, d->name) &&
		    tally_conf_decl_same(core->conf, inst->decl, conf, d))
			return inst;
	}
	return NULL;
}

/* The running pipeline named like @cp whose filters read the same. */
static struct tally_pipeline *graph_same_pipe(struct tally_core *core,
					      struct tally_conf *conf,
					      const struct tally_conf_pipe *cp)
{
	for (size_t i = 0; i < core->npipes; i++) {
		struct tally_pipeline *p = &core->pipes[i];

		if (strcmp(p->name, cp->name) || p->nfilters != cp->nthrough)
			continue;
		for (size_t j = 0; j < cp->nthrough; j++) {
			if (!tally_conf_decl_same(core->conf,
						  p->filters[j]->decl, conf,
						  cp->through[j]))
				return NULL;
		}
		return p;
	}
	return NULL;
}

/*
 * Plan the graph of @conf into @g: running instances that can stay are
 * reused (kept_as: their declaration in @conf), the others are made (not
 * initialized yet).
 * Nothing running is changed. On failure, what was made is freed.
 */
static int graph_plan(struct tally_core *core, struct tally_conf *conf,
		      struct graph *g)
{
	for (size_t i = 0; i < core->ninsts; i++)
		core->insts[i]->kept_as = NULL;
	/* inputs and outputs: one instance each, shared by pipelines */
	for (size_t i = 0; i < conf->ndecls; i++) {
		struct tally_conf_decl *d = &conf->decls[i];
		struct tally_instance *inst;

		if (d->kind == TALLY_KIND_FILTER || !d->used)
			continue;
		inst = graph_reusable(core, conf, d);
		if (inst)
			inst->kept_as = d;
		else
			inst = tally_inst_new(core, conf, d, NULL);
		if (!inst)
			goto out_fail;
		if (graph_add(g, inst) < 0) {
			if (!inst->kept_as)
				tally_inst_free(inst);
			goto out_fail;
		}
	}
	g->pipes = calloc(conf->npipes ? conf->npipes : 1, sizeof(*g->pipes));
	if (!g->pipes)
		goto out_fail;
	g->npipes = conf->npipes;
	for (size_t i = 0; i < conf->npipes; i++) {
		struct tally_conf_pipe *cp = &conf->pipes[i];
		struct tally_pipeline *p = &g->pipes[i];
		struct tally_pipeline *same = graph_same_pipe(core, conf, cp);

		p->name = cp->name;
		p->filters = calloc(cp->nthrough + 1, sizeof(*p->filters));
		p->outputs = calloc(cp->nto + 1, sizeof(*p->outputs));
		if (!p->filters || !p->outputs)
			goto out_fail;
		/* each pipeline has its own instance of every filter */
		for (size_t j = 0; j < cp->nthrough; j++) {
			struct tally_instance *f;

			if (same) {
				f = same->filters[j];
				f->kept_as = cp->through[j];
			} else {
				f = tally_inst_new(core, conf, cp->through[j],
						   cp->name);
			}
			if (!f)
				goto out_fail;
			if (graph_add(g, f) < 0) {
				if (!f->kept_as)
					tally_inst_free(f);
				goto out_fail;
			}
			p->filters[p->nfilters++] = f;
		}
		for (size_t j = 0; j < cp->nto; j++)
			p->outputs[p->noutputs++] =
				graph_find(g, cp->to[j]->name);
	}
	return 0;
out_fail:
	for (size_t i = 0; i < g->ninsts; i++) {
		if (!g->insts[i]->kept_as)
			tally_inst_free(g->insts[i]);
	}
	for (size_t i = 0; i < core->ninsts; i++)
		core->insts[i]->kept_as = NULL;
	free(g->insts);
	graph_free_pipes(g->pipes, g->npipes);
	memset(g, 0, sizeof(*g));
	errno = ENOMEM;
	return -1;
}

/* Wire @g's inputs to its pipelines and its filters to their places. */
static int graph_link(struct graph *g, struct tally_conf *conf)
{
	for (size_t i = 0; i < g->ninsts; i++) {
		struct tally_instance *in = g->insts[i];

		if (in->plugin->kind != TALLY_KIND_INPUT)
			continue;
		free(in->pipes);
		in->pipes = NULL;
		in->npipes = 0;
	}
	for (size_t i = 0; i < g->npipes; i++) {
		struct tally_conf_pipe *cp = &conf->pipes[i];
		struct tally_pipeline *p = &g->pipes[i];

		for (size_t j = 0; j < p->nfilters; j++) {
			p->filters[j]->pipe = p;
			p->filters[j]->pos = j;
		}
		for (size_t j = 0; j < cp->nfrom; j++) {
			struct tally_instance *in;
			struct tally_pipeline **v;

			in = graph_find(g, cp->from[j]->name);
			v = realloc(in->pipes, (in->npipes + 1) * sizeof(*v));
			if (!v)
				return -1;
			in->pipes = v;
			in->pipes[in->npipes++] = p;
		}
	}
	return 0;
}

int tally_graph_build(struct tally_core *core)
{
	struct graph g = { 0 };

	if (graph_plan(core, core->conf, &g) < 0)
		return -1;
	core->insts = g.insts;
	core->ninsts = g.ninsts;
	core->pipes = g.pipes;
	core->npipes = g.npipes;
	return graph_link(&g, core->conf);
}

/* Reload */

/*
 * Take what output @o holds (tally_output_hold()) and what is queued for
 * it, in that order, to hand over to its successor.
 */
static void handover_take(struct handovers *h, struct tally_instance *o)
{
	struct handover *v;
	struct tally_batch **b = NULL;
	size_t nh = tally_outq_held_batches(o), n = o->q.len + nh;

	if (!n)
		return;
	v = realloc(h->v, (h->n + 1) * sizeof(*v));
	if (v) {
		h->v = v;
		b = malloc(n * sizeof(*b));
	}
	if (!b) {
		/* no memory to carry them: freeing @o drops them */
		size_t held = tally_outq_take_held(o, NULL);

		tally_count_drop(NULL, "reload",
				 tally_outq_records(o) + held);
		return;
	}
	/* what the output held was accepted first: it goes first */
	tally_outq_take_held(o, b);
	for (size_t k = 0; k < o->q.len; k++)
		b[nh + k] = o->q.ring[(o->q.head + k) % o->q.cap];
	o->q.len = 0;
	o->q.records = 0;
	h->v[h->n++] = (struct handover){ .name = strdup(o->name),
					  .v = b,
					  .n = n };
}

/*
 * Give each output the batches of its predecessor, ahead of anything new.
 * The batches of outputs with no successor are kept for a later call, or
 * with @last, dropped and counted.
 */
static void handover_give(struct tally_core *core, struct handovers *h,
			  bool last)
{
	size_t left = 0;

	for (size_t i = 0; i < h->n; i++) {
		struct handover *ho = &h->v[i];
		struct tally_instance *o = NULL;

		for (size_t j = 0; ho->name && j < core->ninsts; j++) {
			if (core->insts[j]->plugin->kind == TALLY_KIND_OUTPUT &&
			    !strcmp(core->insts[j]->name, ho->name))
				o = core->insts[j];
		}
		if (!o && !last) {
			h->v[left++] = *ho;
			continue;
		}
		for (size_t k = 0; k < ho->n; k++) {
			if (o) {
				o->records_in += tally_batch_count(ho->v[k]);
				tally_outq_push(o, ho->v[k]);
				continue;
			}
			tally_count_drop(NULL, "reload",
					 tally_batch_count(ho->v[k]));
			tally_batch_unref(ho->v[k]);
		}
		if (!o)
			tally_log(NULL, LOG_WARNING,
				  "reload: output %s is gone: %zu queued "
				  "batches dropped",
				  ho->name ? ho->name : "?", ho->n);
		free(ho->v);
		free(ho->name);
	}
	h->n = left;
	if (!left) {
		free(h->v);
		h->v = NULL;
	}
}

/* Whether @g makes an instance that would take over from @in. */
static bool graph_has_successor(const struct graph *g,
				const struct tally_instance *in)
{
	for (size_t i = 0; i < g->ninsts; i++) {
		const struct tally_instance *n = g->insts[i];

		if (!n->kept_as && n->plugin == in->plugin &&
		    !strcmp(n->label, in->label))
			return true;
	}
	return false;
}

/* The handoff ops of @p (an input's or a filter's), in one shape. */
struct handoff_ops {
	void *(*handoff)(struct tally_instance *inst, void *state, int next);
	int (*adopt)(struct tally_instance *inst, void *state, void *handed);
	void (*discard)(void *handed);
};

static struct handoff_ops handoff_ops_of(const struct tally_plugin *p)
{
	if (p->kind == TALLY_KIND_INPUT)
		return (struct handoff_ops){ p->input->handoff,
					     p->input->adopt,
					     p->input->discard };
	if (p->kind == TALLY_KIND_FILTER)
		return (struct handoff_ops){ p->filter->handoff,
					     p->filter->adopt,
					     p->filter->discard };
	return (struct handoff_ops){ NULL, NULL, NULL };
}

/*
 * Let halted input or filter @in hand its state over (@next: an instance
 * of its label and plugin will be offered it), to be given to that
 * successor.
 */
static void handoff_take(struct handovers *h, struct tally_instance *in,
			 bool next)
{
	struct handoff_ops ops = handoff_ops_of(in->plugin);
	struct handoff *v;
	char *label;
	void *p;

	if (!ops.handoff || !in->initialized)
		return;
	p = ops.handoff(in, in->state, next);
	if (!p)
		return;
	label = strdup(in->label);
	v = label ? realloc(h->in, (h->nin + 1) * sizeof(*v)) : NULL;
	if (!v) {
		tally_log(in, LOG_ERR,
			  "reload: no memory to hand its state over");
		free(label);
		ops.discard(p);
		return;
	}
	h->in = v;
	h->in[h->nin++] = (struct handoff){ label, in->plugin, p };
}

/*
 * Halt @in (a filter's last tick) and let it hand its state over: a
 * filter that hands off knows it in that tick (tally_tick_hands_off()).
 */
static void handoff_retire(struct handovers *h, struct tally_instance *in,
			   bool next)
{
	in->hands_off = next && handoff_ops_of(in->plugin).handoff;
	tally_inst_halt(in);
	in->hands_off = false;
	handoff_take(h, in, next);
}

/* Give new instance @in what its predecessor handed over, if anything. */
static void handoff_give(struct handovers *h, struct tally_instance *in)
{
	struct handoff_ops ops = handoff_ops_of(in->plugin);

	for (size_t i = 0; i < h->nin; i++) {
		struct handoff *ho = &h->in[i];

		if (ho->plugin != in->plugin || strcmp(ho->label, in->label))
			continue;
		if (!ops.adopt || ops.adopt(in, in->state, ho->p) < 0) {
			tally_log(in, LOG_ERR,
				  "reload: could not take over the state of "
				  "the instance it replaces: %s",
				  ops.adopt ? strerror(errno) : "no adopt op");
			ops.discard(ho->p);
		}
		free(ho->label);
		h->in[i] = h->in[--h->nin];
		return;
	}
}

/* Free what no instance took over (the reload is over). */
static void handoff_discard(struct handovers *h)
{
	for (size_t i = 0; i < h->nin; i++) {
		handoff_ops_of(h->in[i].plugin).discard(h->in[i].p);
		free(h->in[i].label);
	}
	free(h->in);
	h->in = NULL;
	h->nin = 0;
}

/*
 * Stop and free the running instances the plan @g did not keep: inputs
 * first (what they still emit runs through the old pipelines; each hands
 * its state over, or ends what must end, right after its stop), then
 * filters (their last tick), then outputs, whose queues are taken over.
 */
static void graph_retire(struct tally_core *core, const struct graph *g,
			 struct handovers *h)
{
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_FILTER; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			struct tally_instance *inst = core->insts[i];

			if ((int)inst->plugin->kind != kind || inst->kept_as)
				continue;
			handoff_retire(h, inst, graph_has_successor(g, inst));
		}
	}
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_OUTPUT; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			struct tally_instance *inst = core->insts[i];

			if (!inst || (int)inst->plugin->kind != kind ||
			    inst->kept_as)
				continue;
			if (kind == TALLY_KIND_OUTPUT)
				handover_take(h, inst);
			tally_inst_free(inst);
			core->insts[i] = NULL;
		}
	}
}

/* Whether input @in feeds an output made by this reload. */
static bool feeds_new_output(const struct tally_instance *in)
{
	for (size_t i = 0; i < in->npipes; i++) {
		for (size_t j = 0; j < in->pipes[i]->noutputs; j++) {
			if (!in->pipes[i]->outputs[j]->kept_as)
				return true;
		}
	}
	return false;
}

/*
 * Make @conf the running graph. On an init or start failure the instances
 * it made are freed and only the kept ones remain running, with no
 * pipelines: the caller applies a configuration again.
 */
static int graph_apply(struct tally_core *core, struct tally_conf *conf,
		       struct handovers *h, const char *what)
{
	struct graph g = { 0 };
	size_t made = 0;
	int ret = 0;

	if (graph_plan(core, conf, &g) < 0) {
		tally_log(NULL, LOG_ERR, "reload: %s", strerror(errno));
		return -1;
	}
	graph_retire(core, &g, h);
	free(core->insts);
	graph_free_pipes(core->pipes, core->npipes);
	core->insts = g.insts;
	core->ninsts = g.ninsts;
	core->pipes = g.pipes;
	core->npipes = g.npipes;
	if (graph_link(&g, conf) < 0)
		goto out_undo;
	for (size_t i = 0; i < g.ninsts; i++) {
		struct tally_instance *inst = g.insts[i];

		if (inst->kept_as)
			continue;
		if (tally_inst_init(inst) < 0)
			goto out_undo;
		if (inst->plugin->kind == TALLY_KIND_INPUT)
			handoff_give(h, inst);
	}
	/*
	 * Filters only once every instance is initialized: a filter's adopt
	 * may send records down its pipeline (flatten resumes its regions).
	 */
	for (size_t i = 0; i < g.ninsts; i++) {
		if (!g.insts[i]->kept_as &&
		    g.insts[i]->plugin->kind == TALLY_KIND_FILTER)
			handoff_give(h, g.insts[i]);
	}
	/* queued before the reload, so delivered before what comes next */
	handover_give(core, h, false);
	for (size_t i = 0; i < g.ninsts; i++) {
		struct tally_instance *inst = g.insts[i];

		if (inst->kept_as)
			continue;
		made++;
		if (tally_inst_start(inst) < 0)
			goto out_undo;
	}
	/* what a new output would wait a whole interval for: read it now */
	for (size_t i = 0; i < g.ninsts; i++) {
		struct tally_instance *in = g.insts[i];

		if (in->kept_as && in->plugin->kind == TALLY_KIND_INPUT &&
		    in->plugin->input->read && feeds_new_output(in))
			tally_input_read_now(in);
	}
	/* the kept ones now belong to @conf */
	for (size_t i = 0; i < g.ninsts; i++) {
		struct tally_instance *inst = g.insts[i];

		if (!inst->kept_as)
			continue;
		inst->decl = inst->kept_as;
		inst->cfile = inst->decl->file;
		inst->cline = inst->decl->line;
	}
	tally_log(NULL, LOG_INFO,
		  "configuration %s: %zu instance%s (%zu new), %zu "
		  "pipeline%s",
		  what, g.ninsts, g.ninsts == 1 ? "" : "s", made, g.npipes,
		  g.npipes == 1 ? "" : "s");
	return 0;
out_undo:
	ret = -1;
	/*
	 * Stop what was made and keep the kept ones, still wired to what is
	 * left of the pipelines, so that the next apply can retire them as
	 * usual (a filter's last tick reaches the kept outputs).
	 */
	for (size_t i = 0; i < g.ninsts; i++) {
		if (g.insts[i]->kept_as)
			continue;
		/* what it took over goes on to the next apply */
		handoff_retire(h, g.insts[i], true);
	}
	for (size_t i = 0; i < g.npipes; i++) {
		struct tally_pipeline *p = &g.pipes[i];
		size_t nf = 0, no = 0;

		for (size_t j = 0; j < p->nfilters; j++) {
			if (!p->filters[j]->kept_as)
				continue;
			p->filters[j]->pos = nf;
			p->filters[nf++] = p->filters[j];
		}
		for (size_t j = 0; j < p->noutputs; j++) {
			if (p->outputs[j]->kept_as)
				p->outputs[no++] = p->outputs[j];
		}
		p->nfilters = nf;
		p->noutputs = no;
	}
	made = 0;
	for (size_t i = 0; i < g.ninsts; i++) {
		struct tally_instance *inst = g.insts[i];

		if (inst->kept_as) {
			g.insts[made++] = inst;
			continue;
		}
		if (inst->plugin->kind == TALLY_KIND_OUTPUT)
			handover_take(h, inst);
		tally_inst_free(inst);
	}
	core->ninsts = made;
	return ret;
}

static void reload_log_level(const struct tally_conf *conf)
{
	tally_log_set_level(conf->log_level
				    ? tally_log_level_parse(conf->log_level)
				    : LOG_INFO);
}

static bool str_differ(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b));
}

/* The identity is given up at start: a reload cannot change it. */
static void reload_identity(const struct tally_conf *old,
			    const struct tally_conf *conf)
{
	if (str_differ(old->user, conf->user) ||
	    str_differ(old->group, conf->group))
		tally_log(NULL, LOG_WARNING,
			  "reload: global.user and global.group take effect "
			  "at the next start only: still running as uid %u, "
			  "gid %u",
			  (unsigned)geteuid(), (unsigned)getegid());
}

int tally_core_reload(struct tally_core *core)
{
	struct tally_conf *conf, *old = core->conf;
	struct handovers h = { 0 };
	int ret;

	conf = tally_conf_load(core->conf_path, core->ld);
	if (!conf || conf->errors) {
		unsigned n = conf ? conf->errors : 1;

		tally_log(NULL, LOG_ERR,
			  "reload: %s: %u error%s (logged above): still "
			  "running the configuration loaded before",
			  core->conf_path, n, n == 1 ? "" : "s");
		tally_conf_free(conf);
		tally_count_event(NULL, "reload_failures", 1);
		return -1;
	}
	reload_log_level(conf);
	reload_identity(old, conf);
	if (graph_apply(core, conf, &h, "applied") == 0) {
		core->conf = conf;
		tally_conf_free(old);
		handover_give(core, &h, true);
		handoff_discard(&h);
		tally_count_event(NULL, "reloads", 1);
		return 0;
	}
	tally_log(NULL, LOG_ERR,
		  "reload: the new configuration failed to start (logged "
		  "above): going back to the one loaded before (errors it "
		  "logs now name lines of the files as they were then)");
	tally_count_event(NULL, "reload_failures", 1);
	reload_log_level(old);
	ret = graph_apply(core, old, &h, "restored");
	/* only now: what is left of the failed graph used its strings */
	tally_conf_free(conf);
	if (ret < 0) {
		/* the old one failed now too: nothing sane is left to run */
		tally_log(NULL, LOG_CRIT,
			  "reload: the configuration loaded before failed to "
			  "start again: stopping");
		core->failed = true;
		tally_core_stop(core);
	}
	handover_give(core, &h, true);
	handoff_discard(&h);
	return -1;
}

/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/graphite/render.h - records to Graphite plaintext lines,
 * as pure code
 *
 * Records become "PATH VALUE TIMESTAMP\n" lines here and nowhere else;
 * graphite.c decides where the bytes go (the core's sender, TCP or UDP)
 * and when. Nothing here does I/O. The unit test t/unit/graphite-render.c
 * compares the output byte for byte, and the fuzz target
 * contrib/fuzz/graphite_render_fuzz.c feeds it arbitrary names and labels.
 *
 * A path is made of parts, in the order of the `layout` option:
 *	"prefix"  the `prefix` option, dots kept (a hierarchy of its own)
 *	"name"    the metric name, dots kept (statsd's "app.req.count" stays
 *	          three nodes), with the suffix of its kind (_count, _sum,
 *	          _bucket; .count, .mean... for interval records)
 *	"labels"  the values of every label not named elsewhere in the
 *	          layout, in key order
 *	KEY       the value of label KEY (e.g. "host"), where the record has it
 * An absent or empty label is no node (labels as Prometheus reads them);
 * dots in label values become '_' so that a value is one node. With
 * format "tags" the layout is not used: the line is Graphite 1.1's
 * "prefix.name;key=value;..." with every label as a tag, in key order.
 * The replacement table is gr_escape()'s, below and in
 * doc/plugins/graphite.md.
 *
 * Not thread-safe: one renderer per output instance, on the loop thread.
 */
#ifndef GRAPHITE_RENDER_H
#define GRAPHITE_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/hash.h>
#include <tally/labels.h>
#include <tally/record.h>

struct evbuffer;

/** enum gr_format - the format option's choices, in its order */
enum gr_format {
	GR_FMT_PATH = 0, /* prefix.host.name.v1.v2 */
	GR_FMT_TAGS,	 /* prefix.name;host=h;k1=v1 (Graphite 1.1) */
};

/**
 * enum gr_ctx - where a string goes, which decides what gr_escape()
 * replaces with '_' (besides what every context replaces: bytes below
 * 0x20, DEL, space, ';', '/', '\\', '"', '\'', and graphite-web's glob
 * and function characters '*', '?', '[', ']', '{', '}', '(', ')', ','):
 * @GR_CTX_NAME:   metric names and the prefix: dots kept as separators,
 *                 but empty nodes (leading, trailing or doubled dots)
 *                 removed; a leading '~' replaced (tags: Graphite 1.1
 *                 strips it from the name tag)
 * @GR_CTX_NODE:   a label value as one path node: '.' replaced too
 * @GR_CTX_TAGKEY: a tag name: '.' kept; '!', '^', '=' replaced (carbon
 *                 refuses them in tag names)
 * @GR_CTX_TAGVAL: a tag value: '.' kept, '=' kept; a leading '~'
 *                 replaced (carbon refuses it)
 */
enum gr_ctx {
	GR_CTX_NAME,
	GR_CTX_NODE,
	GR_CTX_TAGKEY,
	GR_CTX_TAGVAL,
};

/**
 * gr_escape() - make @src safe for Graphite in context @ctx
 * @dst: room for strlen(@src) + 1 bytes; receives the result, NUL-ended
 * @src: a NUL-terminated UTF-8 string (bytes >= 0x80 are kept as they are)
 * @ctx: enum gr_ctx
 *
 * Return: the length of @dst (0 when nothing is left, e.g. a name of
 * dots only). Pure; any thread.
 */
size_t gr_escape(char *dst, const char *src, enum gr_ctx ctx);

/*
 * Longest path node written, in bytes. Whisper keeps a series in
 * NODE/.../LAST.wsp, a directory per node: a node must fit a file name
 * (255 bytes on Linux file systems) with ".wsp" and the suffix of its kind
 * after the name's last node (at most "_bucket"). A longer node is cut to
 * its first GR_NODE_KEEP bytes or less (whole UTF-8 characters), followed
 * by '_' and 8 hex digits, the low 32 bits of the FNV-1a 64-bit hash of
 * the whole node (as escaped): always the same path for the same node,
 * and different paths for nodes that differ after the cut.
 */
#define GR_NODE_MAX  240
#define GR_NODE_KEEP (GR_NODE_MAX - 9)

/**
 * gr_node_cut() - cut one path node to GR_NODE_MAX bytes, as above
 * @node: the node's bytes (escaped: no '.'), changed in place
 * @len:  their number
 *
 * Format "path" only: with format "tags" carbon files a series under a
 * hash of its whole name. Return: the new length (@len when it fits, and
 * nothing changed; a cut node has a NUL after it). Pure; any thread.
 */
size_t gr_node_cut(char *node, size_t len);

/* Most parts a layout may have. */
#define GR_MAX_PARTS 16

/** enum gr_part_kind - one element of the layout option */
enum gr_part_kind {
	GR_PART_PREFIX = 1,
	GR_PART_NAME,
	GR_PART_LABELS,
	GR_PART_LABEL,
};

/**
 * struct gr_part - one part of a path
 * @kind: enum gr_part_kind
 * @key:  GR_PART_LABEL: the label's key (borrowed from the layout list)
 */
struct gr_part {
	enum gr_part_kind kind;
	const char *key;
};

/**
 * struct gr_counts - what a render did, for the output's self-metrics
 * @points:     lines written
 * @non_finite: points left out: NaN or +/-Inf (carbon drops NaN and
 *              graphite-web does not draw infinities)
 * @no_begin:   span ends whose begin is unknown: no time to add
 * @regions_full: span ends of a new region beyond max_regions
 * @other:      records the output does not render (begins, forms it
 *              does not take)
 */
struct gr_counts {
	uint64_t points;
	uint64_t non_finite;
	uint64_t no_begin;
	uint64_t regions_full;
	uint64_t other;
};

/**
 * struct gr_render - one output's renderer
 * Fill it with gr_render_init(); release with gr_render_fini().
 */
struct gr_render {
	enum gr_format format;
	char *prefix;	/* escaped (GR_CTX_NAME), "" for none */
	size_t nparts;
	struct gr_part parts[GR_MAX_PARTS];
	struct tally_labels *labels; /* static labels, referenced */
	size_t max_regions;
	/* scratch, grown as needed */
	char *line;	/* the path being written */
	size_t line_cap;
	size_t len;	/* its length */
	size_t mark;	/* where a suffix goes: after the name */
	struct tally_label *pairs;
	size_t pairs_cap;
	/* spans: region time */
	struct tally_htable regions;
	struct gr_region *dirty; /* touched by the render in progress */
};

/**
 * gr_layout_parse() - check the layout option and fill @parts
 * @items:  the option's strings: "prefix", "name", "labels" or a label
 *          key ([a-zA-Z_][a-zA-Z0-9_]*); borrowed, must outlive @parts
 * @n:      their number
 * @parts:  GR_MAX_PARTS entries, filled on success
 * @nparts: their number on success
 * @err:    message on failure, e.g. "layout: \"name\" must appear once"
 * @errlen: its size
 *
 * "name" exactly once; "prefix" and "labels" and each key at most once.
 * Return: 0, or -1 with errno = EINVAL and the reason in @err. Pure.
 */
int gr_layout_parse(const char *const *items, size_t n, struct gr_part *parts,
		    size_t *nparts, char *err, size_t errlen);

/**
 * gr_render_init() - set up a renderer
 * @r:           zeroed renderer
 * @format:      enum gr_format
 * @prefix:      the prefix option ("" or NULL: none)
 * @parts:       a layout from gr_layout_parse() (copied; keys borrowed)
 * @nparts:      its length
 * @labels:      static labels added under each record's own
 *               (tally_output_labels()); referenced; NULL: none
 * @max_regions: span regions tracked at most (their time counters)
 *
 * Return: 0, or -1 with errno = ENOMEM.
 */
int gr_render_init(struct gr_render *r, enum gr_format format,
		   const char *prefix, const struct gr_part *parts,
		   size_t nparts, struct tally_labels *labels,
		   size_t max_regions);

/**
 * gr_render_batch() - append the lines of every record of @b to @out
 * @r:   the renderer
 * @b:   the batch (only read)
 * @out: receives "PATH VALUE TIMESTAMP\n" lines; timestamps are whole
 *       seconds since the epoch (the record's, rounded down)
 * @c:   counts added to (not zeroed)
 *
 * Metrics: counters, gauges and info one line; histograms NAME_bucket per
 * bucket (label le), NAME_count, NAME_sum; summaries NAME per quantile
 * (label quantile), NAME_count, NAME_sum; interval records the etsy
 * statsd names (see graphite.md). Span ends add their time to their
 * region's counters (labels trace, rank, region and the span's attrs):
 * tally_trace_region_seconds_total and tally_trace_region_calls_total are
 * written once per region the batch touched, cumulative, at the last end's
 * second. The span counters change only when gr_render_commit() says the
 * lines were taken: a batch refused and rendered again later counts once.
 * Return: 0, or -1 with errno = ENOMEM (@out may hold part of the lines:
 * drain it; call gr_render_abort()).
 */
int gr_render_batch(struct gr_render *r, const struct tally_batch *b,
		    struct evbuffer *out, struct gr_counts *c);

/** gr_render_commit() - the lines of the last render were sent: keep its
 * span counters */
void gr_render_commit(struct gr_render *r);

/** gr_render_abort() - the lines of the last render were not sent: forget
 * its span counters (the batch comes again) */
void gr_render_abort(struct gr_render *r);

/** gr_render_regions() - span regions tracked now */
size_t gr_render_regions(const struct gr_render *r);

/** gr_render_fini() - free everything; a zeroed renderer is fine */
void gr_render_fini(struct gr_render *r);

#endif /* GRAPHITE_RENDER_H */

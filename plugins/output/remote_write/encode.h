/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/remote_write/encode.h - records into one Prometheus remote
 * write 1.0 request: a WriteRequest (remote.proto, packed by protobuf-c),
 * snappy-compressed in the block format
 *
 * Pure (no I/O, no loop), so that it is unit-tested on its own: a request
 * is built record by record with rw_req_add(), then rw_req_pack() packs
 * and compresses its samples, or a range of them, into a buffer (a
 * request the server finds too large goes in parts), and rw_req_clear()
 * empties it for the next (rw_req_finish() does both).
 *
 * What a record becomes (cumulative samples only; the output declares no
 * other form, so the core keeps the others away):
 *   counter, gauge, info, untyped: one sample of NAME
 *   histogram: NAME_bucket{le=...} per bucket, NAME_sum, NAME_count
 *   summary:   NAME{quantile=...} per quantile, NAME_sum, NAME_count
 * Labels: the record's own, then the output's static ones (instance, the
 * global labels) for keys the record lacks, names sanitized as in the text
 * exposition (tally/exposition.h), empty values left out, __name__ added,
 * all sorted by name as the spec requires. Two keys that sanitize to one
 * name, or a record label named le or quantile where that label is added,
 * would make the receiver refuse the whole request: such a record is
 * dropped and counted (label_collision). Spans have no remote write form:
 * dropped and counted (span).
 *
 * Samples of one series within a request travel in one TimeSeries, in the
 * order they were added: per-series order is kept as long as requests go
 * out in order (the core's HTTP client sends one at a time).
 *
 * Thread-safety: a request is used by one thread.
 */
#ifndef TALLY_RW_ENCODE_H
#define TALLY_RW_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include <tally/labels.h>
#include <tally/record.h>

struct evbuffer;
struct rw_req;

/**
 * struct rw_drops - records rw_req_add() dropped, by reason (monotonic)
 * @span:            span events (no remote write form)
 * @label_collision: label names clashing after sanitizing, or with le or
 *                   quantile
 * @not_cumulative:  a delta, observation, set member or interval record
 *                   (the core should have kept it away)
 */
struct rw_drops {
	uint64_t span;
	uint64_t label_collision;
	uint64_t not_cumulative;
};

/**
 * rw_req_new() - an empty request
 * @statics: labels added to every series whose own labels lack the key
 *           (tally_output_labels()); NULL for none. Borrowed: it must
 *           outlive the request.
 * Return: the request, or NULL with errno = ENOMEM.
 */
struct rw_req *rw_req_new(const struct tally_labels *statics);

/**
 * rw_req_add() - add the samples of one record
 * @r:   the request
 * @rec: any record; copied (nothing of it is kept)
 *
 * Return: the number of samples added (0 for a dropped record, counted in
 * rw_req_drops()), or -1 with errno = ENOMEM (a histogram or summary may
 * then be partly added: its series that made it are well formed).
 */
int rw_req_add(struct rw_req *r, const struct tally_record *rec);

/** rw_req_samples() - samples in the request now */
size_t rw_req_samples(const struct rw_req *r);

/** rw_req_series() - series (TimeSeries) in the request now */
size_t rw_req_series(const struct rw_req *r);

/** rw_req_drops() - what rw_req_add() dropped since rw_req_new() */
const struct rw_drops *rw_req_drops(const struct rw_req *r);

/**
 * struct rw_mark - a request's state, to take back what was added since
 * (rw_req_mark(), rw_req_rollback())
 */
struct rw_mark {
	size_t nsamples;
	size_t nseries;
	struct rw_drops drops;
};

/** rw_req_mark() - remember the request's state in @m */
void rw_req_mark(const struct rw_req *r, struct rw_mark *m);

/**
 * rw_req_rollback() - take out every sample and series added since
 * rw_req_mark() stored @m (and the drops counted meanwhile); nothing may
 * have been cleared in between. Cannot fail.
 */
void rw_req_rollback(struct rw_req *r, const struct rw_mark *m);

/**
 * rw_req_pack() - pack and compress samples [@skip, @skip + @k) of the
 * request, in its order (series as first seen, each series' samples as
 * added); the request is left as it is
 * @r:    the request
 * @skip: samples to leave out first
 * @k:    samples to pack (0: an empty WriteRequest)
 * @out:  the snappy block (the request body) is appended here
 * @raw:  set to the uncompressed size in bytes, or NULL
 *
 * Return: 0, or -1 with errno = ENOMEM (nothing appended) or EINVAL (the
 * range goes past the request's samples).
 */
int rw_req_pack(const struct rw_req *r, size_t skip, size_t k,
		struct evbuffer *out, size_t *raw);

/**
 * rw_req_finish() - pack and compress the request, then empty it
 * @r:   the request
 * @out: the snappy block (the request body) is appended here
 * @raw: set to the uncompressed size in bytes, or NULL
 *
 * Return: 0 (the request is empty again), or -1 with errno = ENOMEM
 * (nothing appended, the request kept as it was).
 */
int rw_req_finish(struct rw_req *r, struct evbuffer *out, size_t *raw);

/** rw_req_clear() - forget every sample of the request */
void rw_req_clear(struct rw_req *r);

/** rw_req_free() - free; NULL is a no-op */
void rw_req_free(struct rw_req *r);

#endif /* TALLY_RW_ENCODE_H */

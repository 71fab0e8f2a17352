/* SPDX-License-Identifier: MIT */
/*
 * tally/http.h - the HTTP client push outputs share (influxdb,
 * remote_write, the Pushgateway/VictoriaMetrics text push), and the
 * batching of influxdb and remote_write on top of it
 *
 * One client talks to one server ("http://host:port/prefix" from the
 * output's `url` option) over libevent's evhttp client: one keep-alive
 * connection, a name resolved with the event loop's shared evdns base, never
 * a blocking call. The client sends one request at a time, so that what an
 * output sends arrives in the order it was sent (per-series order matters
 * to remote write) and one slow server holds one request, not a pile.
 *
 * What happens to a request (the retry policy, the same for every output):
 *   - 2xx: done, TALLY_HTTP_OK.
 *   - connection errors (refused, reset, closed before a whole response,
 *     name not resolved), timeouts (no whole answer within the timeout),
 *     protocol errors (an answer longer than max_answer), 5xx and 429:
 *     retried after a capped
 *     exponential backoff with jitter: the n-th consecutive failure waits a
 *     uniformly random time in [d/2, d], d = min(backoff_max,
 *     backoff_min * 2^(n-1)); a 429 or 503 with a Retry-After header
 *     (seconds, or an HTTP date) waits at least that long, at most
 *     TALLY_HTTP_RETRY_AFTER_MAX seconds. After max_attempts attempts
 *     (0: no limit) the request is given up: TALLY_HTTP_GAVE_UP.
 *   - any other status (4xx but 429, 1xx, 3xx): never retried; the
 *     server's message (the response body) goes back to the caller:
 *     TALLY_HTTP_REJECTED. A 3xx is not followed: its message says
 *     "redirect to LOCATION is not followed".
 *   - 413 (Request Entity Too Large), or a request of at least
 *     TALLY_HTTP_LARGE_BODY bytes whose connection the server closed
 *     without an answer twice in a row (InfluxDB closes after its 413,
 *     often before the client could read it): TALLY_HTTP_REJECTED with
 *     too_large set, so that the caller splits what it sends.
 * A request the server received but whose answer was lost (the server died
 * between its write and its reply) is sent again: delivery is at least
 * once. InfluxDB and Prometheus overwrite a point with the same series and
 * timestamp, so a repeat changes no stored value.
 *
 * Self-metrics: every client counts, for its instance, with
 * tally_count_event() (exported by the self input as
 * tally_events_total{instance, event}):
 *     http_requests        attempts sent (first tries and retries)
 *     http_responses_2xx   requests that succeeded
 *     http_retries         attempts that were retries
 *     http_failures_connect  attempts without a whole response
 *                          (connection errors; not timeouts)
 *     http_failures_timeout  attempts without a whole answer within the
 *                          timeout
 *     http_failures_protocol attempts whose answer was longer than
 *                          max_answer (or its headers)
 *     http_too_large       requests the server found too large (413)
 *     http_failures_5xx    attempts answered 5xx
 *     http_failures_429    attempts answered 429
 *     http_failures_4xx    requests rejected (other 4xx, 1xx, 3xx)
 *     http_gave_up         requests given up after max_attempts
 *     http_bytes_sent      request body bytes of answered attempts (after
 *                          gzip)
 *     http_bytes_body      request body bytes before gzip
 * and keeps the same figures in struct tally_http_stats.
 *
 * Thread-safety: tally_http_url_parse() and tally_http_gzip() are pure
 * and may be called from any thread; everything else is for the event
 * loop thread only.
 */
#ifndef TALLY_HTTP_H
#define TALLY_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/log.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct evbuffer;
struct tally_instance;

/* Room for any message of this header's functions, NUL included. */
#define TALLY_HTTP_ERRLEN 512

/* Bytes of an answer's body (and of its headers) taken by default. */
#define TALLY_HTTP_MAX_ANSWER 65536

/* A request at least this long may be one the server closes on (413). */
#define TALLY_HTTP_LARGE_BODY (1024 * 1024)

/* The longest Retry-After honoured, in seconds. */
#define TALLY_HTTP_RETRY_AFTER_MAX 300.0

/**
 * struct tally_http_url - a parsed `url` option; plain data, copy freely
 * @host:   the host as written (a name, an IPv4 address, an IPv6 address
 *          without its brackets), lower case
 * @port:   the port (80 when the URL gives none)
 * @prefix: the URL's path without a trailing '/' ("" for none, or e.g.
 *          "/influx" behind a reverse proxy); request paths are appended
 *          to it
 */
struct tally_http_url {
	char host[256];
	uint16_t port;
	char prefix[512];
};

/**
 * tally_http_url_parse() - check and split a `url` option
 * @opt:    the option's name, for messages ("url")
 * @url:    the value as the user wrote it, e.g. "http://127.0.0.1:8086"
 * @out:    the result (written on success only)
 * @err:    message buffer (TALLY_HTTP_ERRLEN bytes), or NULL
 * @errlen: its size
 *
 * Accepts http://HOST[:PORT][/PREFIX] with no query, fragment or user
 * info (credentials belong in their own options). https is refused with
 * a message saying so (no TLS yet). Pure: nothing is resolved. For a
 * plugin's check op.
 * Return: 0, or -1 with errno = EINVAL and the reason in @err, e.g.
 * "url \"ftp://x\": the scheme must be http".
 */
int tally_http_url_parse(const char *opt, const char *url,
			 struct tally_http_url *out, char *err, size_t errlen);

/**
 * struct tally_http_opts - settings of a client; 0 = default
 * @timeout:      seconds an attempt may take in all, from connecting to
 *                the last byte of the answer (default 10): a server that
 *                trickles its answer a byte at a time runs out too.
 *                Running out is a timeout (counted as such, retried)
 * @backoff_min:  seconds before the first retry (default 0.5)
 * @backoff_max:  cap of the exponential backoff (default 30)
 * @max_attempts: attempts per request before it is given up, the first
 *                included (default 0: no limit, retried until it gets a
 *                final answer: an output's queue in front bounds what
 *                waits meanwhile)
 * @gzip:         compress request bodies (gzip, level 1;
 *                "Content-Encoding: gzip")
 * @max_response: bytes of a response body kept for the caller (default
 *                4096; the rest is discarded)
 * @max_answer:   bytes of a response body (and, separately, of its
 *                headers) read at most (default TALLY_HTTP_MAX_ANSWER):
 *                an answer announcing or sending more fails the attempt
 *                as a protocol error (counted, logged once per client,
 *                retried), so that a broken server cannot make the
 *                client buffer without bound
 */
struct tally_http_opts {
	double timeout;
	double backoff_min;
	double backoff_max;
	unsigned max_attempts;
	bool gzip;
	size_t max_response;
	size_t max_answer;
};

/**
 * struct tally_http_header - one request header
 * @name:  header name, e.g. "Authorization"
 * @value: its value (copied when the request is made)
 */
struct tally_http_header {
	const char *name;
	const char *value;
};

/**
 * enum tally_http_outcome - how a request ended
 * @TALLY_HTTP_OK:       a 2xx answer
 * @TALLY_HTTP_REJECTED: an answer that is not retried (4xx but 429, 1xx,
 *                       3xx): the request will never succeed as it is
 * @TALLY_HTTP_GAVE_UP:  max_attempts retryable failures in a row
 */
enum tally_http_outcome {
	TALLY_HTTP_OK = 1,
	TALLY_HTTP_REJECTED,
	TALLY_HTTP_GAVE_UP,
};

/**
 * struct tally_http_result - what a request came to, for its done callback
 * @outcome:  enum tally_http_outcome
 * @status:   HTTP status of the last answer, 0 when the last attempt got
 *            none (connection error)
 * @body:     the last answer's body, NUL-terminated, cut to max_response
 *            bytes ("" when none); the server's message for a rejection
 * @body_len: its length
 * @error:    the last failure in words ("connection refused", "HTTP 503",
 *            "timed out", ...), "" after success
 * @attempts: attempts made, the first included
 * @message:  the server's message fit for a log line: the body with
 *            control characters escaped and cut (tally_log_peer_text()),
 *            or for a 3xx "redirect to LOCATION is not followed"; ""
 *            when none
 * @too_large: the server refused the request as too large (413, or a
 *            close right after a large body, see above): send less
 * Valid during the callback only.
 */
struct tally_http_result {
	enum tally_http_outcome outcome;
	int status;
	const char *body;
	size_t body_len;
	const char *error;
	unsigned attempts;
	const char *message;
	bool too_large;
};

/**
 * tally_http_done_fn - called once when a request has ended
 * @arg: as given to tally_http_client_request()
 * @r:   the result (valid during the call)
 *
 * Runs on the loop thread, never from inside tally_http_client_request().
 * The client is idle by then: the callback may make the next request, and
 * may free the client.
 */
typedef void (*tally_http_done_fn)(void *arg,
				   const struct tally_http_result *r);

/**
 * struct tally_http_stats - counters of one client (see the list at the
 * top of this header); monotonic since the client was made
 * @requests:         attempts sent
 * @ok:               requests answered 2xx
 * @retries:          attempts that were retries
 * @failures_connect: attempts without a whole response
 * @failures_5xx:     attempts answered 5xx
 * @failures_429:     attempts answered 429
 * @rejected:         requests rejected (4xx but 429, 1xx, 3xx)
 * @gave_up:          requests given up
 * @bytes_sent:       request body bytes of attempts the server answered,
 *                    after gzip
 * @bytes_body:       request body bytes before gzip
 * @busy:             a request is in flight or waiting to be retried (now)
 * @backoff:          seconds of the current wait before a retry (0 when
 *                    not waiting)
 * @failures_timeout: attempts that ran out of time
 * @failures_protocol: attempts with an answer over max_answer
 * @too_large:        requests refused as too large
 */
struct tally_http_stats {
	uint64_t requests;
	uint64_t ok;
	uint64_t retries;
	uint64_t failures_connect;
	uint64_t failures_5xx;
	uint64_t failures_429;
	uint64_t rejected;
	uint64_t gave_up;
	uint64_t bytes_sent;
	uint64_t bytes_body;
	bool busy;
	double backoff;
	uint64_t failures_timeout;
	uint64_t failures_protocol;
	uint64_t too_large;
};

struct tally_http_client;

/**
 * tally_http_client_new() - a client for one server
 * @inst: for log lines and the self-metrics above (NULL: neither)
 * @base: the event loop
 * @url:  the server, parsed by tally_http_url_parse() (copied)
 * @o:    settings (copied), or NULL for the defaults
 *
 * Nothing is connected before the first request. Loop thread only.
 * Return: the client, or NULL with errno = ENOMEM.
 */
struct tally_http_client *
tally_http_client_new(struct tally_instance *inst, struct event_base *base,
		      const struct tally_http_url *url,
		      const struct tally_http_opts *o);

/**
 * tally_http_client_request() - send a request, retried as the policy says
 * @c:      the client
 * @method: "POST", "PUT" or "GET"
 * @path:   path and query, appended to the URL's prefix; starts with '/'
 *          and is already percent-encoded (e.g. "/write?db=tally&
 *          precision=ns")
 * @h:      @nh extra headers (copied); Host, Content-Length and, with
 *          gzip, Content-Encoding are set by the client
 * @nh:     their number
 * @body:   the body, or NULL for none; its content is moved into the
 *          client on success (@body is left empty) and left as it was on
 *          failure. It is compressed once, and the same bytes are sent
 *          on every attempt
 * @done:   called once when the request ends (never on failure here)
 * @arg:    passed to @done
 *
 * The first attempt starts at once (the connection is opened, or the
 * kept-alive one reused). Loop thread only.
 * Return: 0, or -1 with errno = EBUSY (a request is in flight or waiting
 * for its retry: call again after its @done), EINVAL (@path does not
 * start with '/', an unknown method) or ENOMEM; nothing was taken then.
 */
int tally_http_client_request(struct tally_http_client *c, const char *method,
			      const char *path,
			      const struct tally_http_header *h, size_t nh,
			      struct evbuffer *body, tally_http_done_fn done,
			      void *arg);

/**
 * tally_http_client_busy() - whether a request is in flight or waiting for
 * a retry (tally_http_client_request() would say EBUSY)
 */
bool tally_http_client_busy(const struct tally_http_client *c);

/**
 * tally_http_client_retry_now() - cut the wait before a retry short
 *
 * For shutdown: a flush that wants what is pending to go out now. No-op
 * unless the request waits for its backoff. Loop thread only.
 */
void tally_http_client_retry_now(struct tally_http_client *c);

/** tally_http_client_get_stats() - copy the counters into @out */
void tally_http_client_get_stats(const struct tally_http_client *c,
				 struct tally_http_stats *out);

/**
 * tally_http_client_free() - close the connection and free; NULL is a
 * no-op
 *
 * A request still in flight or waiting is abandoned and its @done is not
 * called: check tally_http_client_busy() first to count what it held.
 * Loop thread only.
 */
void tally_http_client_free(struct tally_http_client *c);

/**
 * tally_http_gzip() - compress all of @src into @dst as one gzip member
 * (RFC 1952)
 * @src:   drained on success (left as it was on failure)
 * @dst:   the compressed bytes are appended
 * @level: zlib level, 1 (fast; on metric text still about tenfold) to 9
 *
 * Used for request bodies here and for the prometheus output's pages.
 * Any thread, on buffers it owns.
 * Return: 0, or -1 with errno = ENOMEM (@dst may hold a partial member
 * then: discard it).
 */
int tally_http_gzip(struct evbuffer *src, struct evbuffer *dst, int level);

/**
 * struct tally_http_complaints - one output's repeated complaints about
 * its requests, for tally_http_complain(); zero-initialize
 */
struct tally_http_complaints {
	struct tally_log_limit refused;
	struct tally_log_limit gave_up;
};

/**
 * tally_http_complain() - log and count a request that failed for good
 * @c:    the output's complaints (each logged at most once a minute)
 * @inst: the output instance
 * @res:  the request's result: TALLY_HTTP_REJECTED ("write refused (HTTP
 *        N): <server's message>", dropped as "rejected") or
 *        TALLY_HTTP_GAVE_UP ("write failed N times (<error>)", dropped as
 *        "gave_up"); TALLY_HTTP_OK does nothing
 * @n:    what the request carried, in @unit
 * @unit: plural ("points", "series")
 *
 * The outputs on the batcher below get it from the batcher; an output that
 * sends state rather than batches (prometheus_push) calls it itself.
 * Loop thread only.
 */
void tally_http_complain(struct tally_http_complaints *c,
			 struct tally_instance *inst,
			 const struct tally_http_result *res, size_t n,
			 const char *unit);

/*
 * Batching push outputs (influxdb, remote_write) on top of a client: what
 * an output renders waits in its own forms (line protocol text, a remote
 * write request in the making); the batcher decides when it goes out and
 * what happens to it:
 *   - items are added to the output's pending form; a request goes when
 *     batch_size items are pending, or when the oldest pending item has
 *     waited flush_interval seconds: the pending form is then sealed into
 *     the out form (the seal op), which keeps the items until they are
 *     delivered or dropped, while the pending form fills again. One
 *     request at a time (the client's rule): per-series order holds;
 *   - a request the server refuses as too large (413, or a close right
 *     after a large body: tally_http_result.too_large) goes again in
 *     halves, down to one item; a single item too large is dropped,
 *     counted as "too_large" (Telegraf does the same);
 *   - while a request is out (a server down retries it with backoff) and
 *     batch_size items are pending again, tally_http_batch_room() says
 *     EAGAIN: the output's write() returns it, and the core's bounded
 *     queue in front holds further batches (its overflow drops the oldest,
 *     counted as queue_full); tally_output_ready() once there is room;
 *   - every batch whose items were added is held (tally_output_hold())
 *     until its items are delivered or dropped: a reload that replaces
 *     the output hands them to its successor, and tally_http_batch_free()
 *     then counts nothing of them;
 *   - outcomes are counted for the instance: items of a 2xx request as
 *     tally_count_event() "<unit>_written"; a rejection (4xx but 429) is
 *     logged (at most once a minute) with the server's message and its
 *     items dropped as "rejected" (unless the output's rejected op handled
 *     it); a request given up after max_attempts as "gave_up"; a request
 *     that could not be made as "nomem"; what is left at free as
 *     "undelivered_at_exit";
 *   - tally_output_held() always says how many items are pending or being
 *     delivered, so that shutdown waits for them.
 * Loop thread only.
 */

/**
 * struct tally_http_batch_ops - what a batching output does for the batcher
 *
 * The output keeps two forms of its items: pending (tally_http_batch_added()
 * counted them) and out (being delivered, in the order added).
 * @seal:     move every pending item into the out form, which is empty on
 *            entry (swapping two buffers, say); the pending form is empty
 *            afterwards. Cannot fail
 * @body:     append to @body (empty on entry) the request body of the
 *            first @k items of the out form (1 <= @k <= those there);
 *            the items stay in the out form. The bytes may be referenced
 *            rather than copied (evbuffer_add_reference()): they must then
 *            stay until @advance drops them. Return 0, or -1 with errno =
 *            ENOMEM: the batcher drops the whole out form (@advance),
 *            counted as "nomem"
 * @advance:  the first @k items of the out form are done with (delivered,
 *            or dropped and counted): forget them
 * @rejected: optional: a request of @n items got a final non-2xx answer
 *            that is not "too large" (TALLY_HTTP_REJECTED, @r): return 0
 *            if the output logged and counted it (influxdb's partial
 *            writes), -1 to leave it to the batcher ("rejected")
 */
struct tally_http_batch_ops {
	void (*seal)(void *arg);
	int (*body)(void *arg, size_t k, struct evbuffer *body);
	void (*advance)(void *arg, size_t k);
	int (*rejected)(void *arg, const struct tally_http_result *r,
			size_t n);
};

/**
 * struct tally_http_batch_opts - how requests are made and batched
 * @method:         "POST" or "PUT"
 * @path:           request path, as tally_http_client_request() (copied)
 * @h:              @nh request headers (copied)
 * @nh:             their number
 * @batch_size:     items per request at most (> 0)
 * @flush_interval: seconds the oldest pending item may wait (> 0)
 * @unit:           what an item is, plural ("points", "samples"): for log
 *                  lines and the "<unit>_written" event (copied)
 * @item:           the same, singular ("point", "sample"), for log lines
 *                  (copied)
 */
struct tally_http_batch_opts {
	const char *method;
	const char *path;
	const struct tally_http_header *h;
	size_t nh;
	size_t batch_size;
	double flush_interval;
	const char *unit;
	const char *item;
};

struct tally_http_batch;
struct tally_batch;

/**
 * tally_http_batch_new() - a batcher and its client
 * @inst: the output instance (logs, counts, tally_output_ready/held/hold)
 * @base: the event loop
 * @url:  the server (copied), as tally_http_client_new()
 * @ho:   the client's settings, or NULL for the defaults
 * @o:    batching (copied)
 * @ops:  the output's ops (kept: static storage)
 * @arg:  passed to @ops
 * Return: the batcher, or NULL with errno = ENOMEM or EINVAL (a zero
 * batch_size or flush_interval).
 */
struct tally_http_batch *
tally_http_batch_new(struct tally_instance *inst, struct event_base *base,
		     const struct tally_http_url *url,
		     const struct tally_http_opts *ho,
		     const struct tally_http_batch_opts *o,
		     const struct tally_http_batch_ops *ops, void *arg);

/**
 * tally_http_batch_room() - whether write() may add items now
 *
 * When batch_size items are pending, tries to send them first.
 * Return: 0, or -1 with errno = EAGAIN (pending is full and a request is
 * out: return that from write(); the batcher calls tally_output_ready()
 * once there is room).
 */
int tally_http_batch_room(struct tally_http_batch *b);

/**
 * tally_http_batch_added() - @n more items of batch @tb are pending (the
 * output added them to its pending form)
 *
 * Holds @tb for @n items (tally_output_hold()), then sends at batch_size
 * or makes sure the flush timer runs; @n = 0 does nothing.
 * Return: 0, or -1 with errno = ENOMEM: not held and not counted as
 * pending: the output takes the @n items back out of its pending form
 * (and write() fails with ENOMEM, the core counting the batch).
 */
int tally_http_batch_added(struct tally_http_batch *b, struct tally_batch *tb,
			   size_t n);

/**
 * tally_http_batch_flush() - send what is pending now, and cut a retry's
 * wait short (the output's flush op: shutdown, --once)
 */
void tally_http_batch_flush(struct tally_http_batch *b);

/**
 * tally_http_batch_free() - count what was not delivered, unless a reload
 * took it ("undelivered_at_exit"; logged in one line unless the core's
 * shutdown deadline line already said it: tally_output_loss_logged()),
 * free the client; NULL is a no-op. The output frees its forms afterwards
 * (a request in flight may reference their bytes until then)
 */
void tally_http_batch_free(struct tally_http_batch *b);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_HTTP_H */

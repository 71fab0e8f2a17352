/* SPDX-License-Identifier: MIT */
/*
 * tally/net.h - networking, once: addresses, the loopback policy, unix
 * sockets, the capped drain-then-yield listener and the reconnecting sender
 *
 * Every plugin that opens a socket goes through here, so that the same
 * address means the same thing everywhere and the same rules hold:
 *
 *   - Addresses. `listen` (what tallyd serves on) and `server` (what it
 *     connects to) are written "host:port", "[ipv6]:port", "*:port" (every
 *     local address; listen only) or "unix:/path"; the transport (TCP or
 *     UDP) is the plugin's choice (its `protocol` option), never part of
 *     the address. `endpoint` keeps ZeroMQ's URL syntax ("ipc:///path",
 *     "tcp://host:port") and the same ipc path rules as "unix:/path".
 *     Parsing never resolves a name: numeric addresses are parsed as they
 *     are, names are resolved with libevent's evdns when a socket is made,
 *     never blocking the loop.
 *   - One loopback policy: a user collector (tallyd --user) listens on
 *     loopback and unix sockets only; tally_net_addr_loopback() decides
 *     what loopback is.
 *   - One unix socket rule: the path fits in sun_path or the error says
 *     the limit; the file gets its mode before anyone can connect; a stale
 *     file is replaced, a live collector's socket is never stolen and a
 *     socket another user owns is never used.
 *   - One way to read a flood without starving the loop: drain at most N
 *     items per wake-up, then yield; coalesce the wake-ups of a trickle
 *     (struct tally_net_drain, and struct tally_net_listener on top of it).
 *   - One way to push to a server: struct tally_net_sender reconnects with
 *     capped, jittered backoff, reports a full buffer as EAGAIN (so the
 *     core's output queue keeps the batch) and says when it has room again.
 *
 * Error messages are complete, user-facing sentences naming the option and
 * the value as written, e.g.
 *     listen "127.0.0.1": no port: write host:port, [ipv6]:port, *:port
 *     or unix:/path
 * Functions that parse write them to a caller's buffer (the configuration
 * check prefixes file:line); functions that act log them with tally_log().
 *
 * Thread-safety: the parsing and policy functions are pure and may be
 * called from any thread. Everything that owns a socket or an event is
 * for the event loop thread only.
 */
#ifndef TALLY_NET_H
#define TALLY_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;
struct evbuffer;
struct tally_instance;

/* Room for any message of this header's functions, NUL included. */
#define TALLY_NET_ERRLEN 512

/* Longest unix socket path, without its NUL: 107 on Linux. */
#define TALLY_NET_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

/* flags of tally_net_addr_parse() and tally_net_zmq_parse() */
#define TALLY_NET_LISTEN    0x01u /* a local address tallyd binds: "*" and
				   * port 0 (any free port) are allowed and
				   * the loopback policy of the mode applies */
#define TALLY_NET_UNIX	    0x02u /* "unix:/path" accepted */
#define TALLY_NET_UDP	    0x04u /* datagrams (SOCK_DGRAM), not streams */
#define TALLY_NET_AS_USER   0x08u /* apply a user collector's policy
				   * whatever the mode (tests, tools) */
#define TALLY_NET_AS_SYSTEM 0x10u /* apply the system collector's policy */

/**
 * enum tally_net_kind - what an address names
 * @TALLY_NET_ANY:      "*:port" (or ":port"): every local address, IPv4
 *                      and IPv6 (listen only)
 * @TALLY_NET_IPV4:     a numeric IPv4 address
 * @TALLY_NET_IPV6:     a numeric IPv6 address, written in brackets
 * @TALLY_NET_NAME:     a host name (or, in a ZeroMQ endpoint, an
 *                      interface name), resolved when a socket is made
 * @TALLY_NET_PATH:     a unix socket file
 * @TALLY_NET_ABSTRACT: a Linux abstract unix socket ("unix:@name",
 *                      "ipc://@name"): no file, no permissions
 */
enum tally_net_kind {
	TALLY_NET_ANY = 1,
	TALLY_NET_IPV4,
	TALLY_NET_IPV6,
	TALLY_NET_NAME,
	TALLY_NET_PATH,
	TALLY_NET_ABSTRACT,
};

/**
 * struct tally_net_addr - a parsed address; plain data, copy freely
 * @kind:     enum tally_net_kind
 * @socktype: SOCK_STREAM or SOCK_DGRAM (TALLY_NET_UDP)
 * @flags:    the TALLY_NET_* flags it was parsed with
 * @zmq:      parsed from a ZeroMQ endpoint (an interface name may stand
 *            for the host: "lo" is loopback there)
 * @port:     TCP/UDP port, host order; 0 = any free port (listen only)
 * @host:     IPV4/IPV6: the address in canonical text (inet_ntop, an IPv6
 *            zone kept as "%zone"); NAME: the name in lower case without a
 *            trailing dot; ANY: "*"; unix kinds: ""
 * @path:     PATH: the absolute path; ABSTRACT: the name without its '@';
 *            at most TALLY_NET_PATH_MAX bytes
 * @sa:       ANY (the IPv6 wildcard), IPV4, IPV6, PATH, ABSTRACT: the
 *            socket address to bind or connect, with @salen; NAME: unset
 * @salen:    length of @sa (0 for NAME)
 */
struct tally_net_addr {
	enum tally_net_kind kind;
	int socktype;
	unsigned flags;
	bool zmq;
	uint16_t port;
	char host[256];
	char path[TALLY_NET_PATH_MAX + 1];
	struct sockaddr_storage sa;
	socklen_t salen;
};

/**
 * tally_net_addr_parse() - parse a `listen` or `server` address
 * @opt:    the option's name, for messages ("listen", "server")
 * @spec:   the value as the user wrote it
 * @flags:  TALLY_NET_* flags: LISTEN for a local address (else a server
 *          to connect to), UNIX to accept "unix:/path", UDP for
 *          datagrams; AS_USER / AS_SYSTEM to judge as that mode
 * @out:    the result (written on success only)
 * @err:    message buffer, TALLY_NET_ERRLEN bytes, or NULL
 * @errlen: its size
 *
 * Accepts "host:port", "[ipv6]:port" (an IPv6 zone as "[fe80::1%eth0]"),
 * with LISTEN also "*:port" and ":port" (every address) and port 0 (any
 * free port); with UNIX "unix:/abs/path" and "unix:@abstract". Ports are
 * decimal. Host names are checked for syntax (RFC 1123 labels) only:
 * nothing is resolved. With LISTEN the loopback policy applies
 * (tally_net_listen_permitted()) for the mode tallyd runs in, or the one
 * AS_USER/AS_SYSTEM names. Pure: no socket, no file, no DNS.
 * Return: 0, or -1 with errno = EINVAL (syntax), ENAMETOOLONG (path longer
 * than sun_path allows), EPERM (the loopback policy refuses it) and the
 * reason in @err, e.g. "listen \"x:99999\": port 99999 is out of range:
 * use 0 to 65535 (0 for any free port)".
 */
int tally_net_addr_parse(const char *opt, const char *spec, unsigned flags,
			 struct tally_net_addr *out, char *err, size_t errlen);

/**
 * tally_net_addr_format() - the canonical text of an address
 * @a:   a parsed address
 * @buf: output, NUL-terminated (truncated to @len)
 * @len: its size; 300 bytes hold every address
 *
 * "127.0.0.1:9464", "[::1]:9464", "*:9464", "name:9464", "unix:/path",
 * "unix:@name" (ZeroMQ endpoints: "tcp://...", "ipc://..."). Two addresses
 * with the same text are the same. Thread-safe.
 * Return: @buf.
 */
const char *tally_net_addr_format(const struct tally_net_addr *a, char *buf,
				  size_t len);

/**
 * tally_net_addr_loopback() - the loopback policy: is @a reachable from
 * this host only?
 *
 * Loopback: 127.0.0.0/8, ::1, IPv4-mapped 127.0.0.0/8 (::ffff:127.x.y.z),
 * the name "localhost" (any case, RFC 6761) and names ending in
 * ".localhost", unix sockets (files and abstract names), and in a ZeroMQ
 * endpoint the interface "lo". Not loopback: "*", 0.0.0.0, ::, every other
 * address and every other name (what a name resolves to can change, so it
 * is not trusted). The unit test t/unit/net-addr.c holds the table.
 * Thread-safe. Return: true or false.
 */
bool tally_net_addr_loopback(const struct tally_net_addr *a);

/**
 * tally_net_sockaddr_loopback() - the same policy for a resolved address
 * @sa: AF_INET, AF_INET6 or AF_UNIX; NULL or another family gives false
 *
 * Used on what a name resolved to, so "localhost" mapped elsewhere by a
 * hosts file is caught when the socket is made. Thread-safe.
 */
bool tally_net_sockaddr_loopback(const struct sockaddr *sa);

/**
 * tally_net_listen_permitted() - may a collector of this mode listen on @a?
 * @a:    a listen address
 * @user: true for a user collector (tally_user_mode())
 *
 * A system collector listens anywhere; a user collector only where
 * tally_net_addr_loopback() says, so a job's collector is never reachable
 * from another host. Thread-safe.
 */
bool tally_net_listen_permitted(const struct tally_net_addr *a, bool user);

/**
 * tally_net_addr_clash() - whether two listen addresses cannot both be bound
 *
 * Same socket file or abstract name (whatever the socket type); or the
 * same transport and port (port 0 never clashes) where the hosts overlap:
 * equal addresses, "*" with anything, 0.0.0.0 with any IPv4 address, ::
 * with any address (tallyd binds it dual-stack), "localhost" with
 * 127.0.0.1 and ::1, equal names. Two different names, or a name and a
 * numeric address, are not compared (that needs DNS). Thread-safe.
 */
bool tally_net_addr_clash(const struct tally_net_addr *a,
			  const struct tally_net_addr *b);

/**
 * tally_net_zmq_parse() - check a ZeroMQ `endpoint` and split it
 * @opt:    the option's name, for messages ("endpoint")
 * @ep:     the endpoint as written
 * @flags:  TALLY_NET_LISTEN when tallyd binds it (port "*" allowed, the
 *          loopback policy applies), AS_USER / AS_SYSTEM as above
 * @out:    ipc endpoints: kind PATH or ABSTRACT with the path; tcp: kind
 *          ANY ("*"), IPV4, IPV6 or NAME (a host or interface name) with
 *          the port (0 for "*"); @out->zmq is set
 * @err:    message buffer (TALLY_NET_ERRLEN), or NULL
 * @errlen: its size
 *
 * "ipc:///abs/path" and "ipc://@abstract" follow the unix:/path rules (a
 * path too long for sun_path is refused with the limit in the message);
 * "tcp://host:port" takes a port from 1 to 65535, "*" or 0 for any free
 * one. libzmq itself accepts more than it binds as meant (port 99999
 * wraps, "-5" is taken), hence the strict check. Pure.
 * Return: 0, or -1 with errno = EINVAL, ENAMETOOLONG or EPERM and the
 * reason in @err, e.g. "endpoint ipc://rel.sock: the ipc path must be
 * absolute (ipc:///dir/file) or abstract (ipc://@name)".
 */
int tally_net_zmq_parse(const char *opt, const char *ep, unsigned flags,
			struct tally_net_addr *out, char *err, size_t errlen);

/*
 * Unix sockets
 */

/**
 * struct tally_net_unix - a unix socket tallyd bound, and its file
 * @fd:       the socket (listening for a stream), or -1; whoever takes it
 *            (e.g. libzmq through ZMQ_USE_FD) sets @fd to -1
 * @lock_fd:  the lock that says "a tallyd owns this path", or -1
 * @file:     a socket file we created, unlinked by tally_net_unix_close()
 *            if it is still the one we made (@dev, @ino)
 * @dev:      its device
 * @ino:      its inode
 * @path:     the socket's path (PATH) or abstract name (ABSTRACT)
 *
 * Zero it and set @fd and @lock_fd to -1 before use, or let
 * tally_net_unix_bind() fill it.
 */
struct tally_net_unix {
	int fd;
	int lock_fd;
	bool file;
	dev_t dev;
	ino_t ino;
	char path[TALLY_NET_PATH_MAX + 1];
};

/**
 * tally_net_unix_mode() - the socket file mode the policy gives
 * @group: a group may send (the plugin's `group` option is set)
 *
 * 0660 with a group; otherwise 0600 for a user collector (its user only)
 * and 0666 for the system collector (every user's jobs send to it).
 */
unsigned tally_net_unix_mode(bool group);

/**
 * tally_net_unix_bind() - bind a unix socket, safely
 * @inst:  for log lines (NULL: the core's)
 * @what:  names the address in messages, e.g. "endpoint ipc:///run/x.sock"
 *         or "listen \"unix:/run/x.sock\""
 * @a:     a PATH or ABSTRACT address (its socktype: stream or datagram)
 * @mode:  the socket file's mode (tally_net_unix_mode()); ignored for
 *         ABSTRACT
 * @gid:   group to give the file, or (gid_t)-1 to leave it
 * @u:     filled on success
 *
 * For a file: takes "PATH.lock" (flock, created 0600, never followed as a
 * symlink and refused if another user owns it) so that two collectors
 * starting together cannot both decide a file is stale; binds; on
 * EADDRINUSE looks at what is there: not a socket, or a socket another
 * user owns: refused; a live socket (a connect() succeeds): refused, never
 * stolen; a stale one (connect() refused): replaced, logged at info. The
 * file gets @gid and @mode before listen() (streams) or before any
 * datagram is read (datagrams: what arrived in between is discarded), so
 * no peer ever uses it with looser permissions. The socket is
 * non-blocking and close-on-exec.
 * Loop thread (or before the loop runs). Logs every failure, as one line
 * "@what: REASON", REASON as tally_net_unix_reserve() words it.
 * Return: 0, or -1 with errno = EADDRINUSE (live socket or locked),
 * EEXIST (not a socket), EPERM (another user's socket or lock file),
 * ENAMETOOLONG, or the errno of the failing call; @u is then closed.
 */
int tally_net_unix_bind(struct tally_instance *inst, const char *what,
			const struct tally_net_addr *a, unsigned mode,
			gid_t gid, struct tally_net_unix *u);

/**
 * tally_net_unix_reserve() - tally_net_unix_bind(), with the reason of a
 * failure handed back instead of logged
 * @inst:   for the one line still logged: "replacing stale socket file
 *          PATH", at info (NULL: the core's)
 * @a:      as tally_net_unix_bind()
 * @mode:   as tally_net_unix_bind()
 * @gid:    as tally_net_unix_bind()
 * @u:      as tally_net_unix_bind()
 * @why:    on failure, the reason without the address's name, e.g. "a
 *          collector is listening there: not taking it over", "PATH is a
 *          socket of another user (uid 1001): not taking it over", "in
 *          use by another tallyd (PATH.lock is locked): not taking it
 *          over", "PATH exists and is not a socket"; NUL-terminated,
 *          truncated to @whylen (TALLY_NET_ERRLEN holds any). May be NULL.
 * @whylen: its size
 *
 * For a caller whose line says more than the address, e.g. zmq_trace's
 * "omnistat_endpoint EP: REASON; receiving on EP only". Also the way to
 * reserve a path for a library that binds by name but accepts on a socket
 * it is given: with a stream address, @u->fd is listening on return; hand
 * it over (libzmq: ZMQ_USE_FD, then zmq_bind() of the same ipc endpoint)
 * and set @u->fd to -1, the library now closes it; tally_net_unix_close()
 * still removes the file, if it is still ours, and releases the lock.
 * The rules, thread and return values are tally_net_unix_bind()'s.
 */
int tally_net_unix_reserve(struct tally_instance *inst,
			   const struct tally_net_addr *a, unsigned mode,
			   gid_t gid, struct tally_net_unix *u, char *why,
			   size_t whylen);

/**
 * tally_net_unix_close() - close the socket (if @u->fd >= 0), unlink the
 * file if it is still ours, release the lock
 *
 * The lock file stays: removing it would race with the next owner.
 * Idempotent; safe on a zeroed struct with fds at -1.
 */
void tally_net_unix_close(struct tally_net_unix *u);

/*
 * Binding and naming sockets
 */

/**
 * tally_net_bind() - bind (and for streams, listen on) a listen address
 * @inst:   for log lines; tally_instance_base(@inst) resolves names
 * @what:   names the address in messages, e.g. "listen \"*:8125\""
 * @a:      a parsed listen address (TALLY_NET_LISTEN); unix addresses
 *          are bound with tally_net_unix_bind(), mode from
 *          tally_net_unix_mode(false)
 * @fds:    receives the bound sockets (non-blocking, close-on-exec)
 * @maxfds: room in @fds (4 is enough for any address)
 * @u:      for unix addresses, receives the socket file's state (close it
 *          with tally_net_unix_close() after closing the fds); may be
 *          NULL for other kinds
 *
 * TCP and UDP ports follow the port rule of tally/mode.h: the port is
 * tally_listen_port(@inst, port) (a user collector's: one the kernel
 * chooses, unless global.user_ports = "configured"), and with @inst set
 * every address bound is published with tally_listen_publish(); the
 * caller logs where it serves (tally_net_sockname()).
 * ANY binds [::] dual-stack (IPV6_V6ONLY off), or 0.0.0.0 where the host
 * has no IPv6. A NAME is resolved with evdns from the hosts file, without
 * waiting for DNS (a listen address is a local one: a name that needs a
 * DNS query is refused with a message saying to write it numerically), and
 * every address it gives is bound (localhost: 127.0.0.1 and ::1; one that
 * the host lacks is skipped if another one binds). In a user collector a
 * resolved address off loopback is refused. Streams get SO_REUSEADDR (a
 * restart does not wait for TIME_WAIT) and listen(SOMAXCONN); datagram
 * sockets do not (two collectors must not share a UDP port silently).
 * Loop thread or before the loop runs. Logs every failure.
 * Return: the number of sockets bound (>= 1), or -1 with errno (EADDRINUSE,
 * EACCES, EADDRNOTAVAIL, ENOENT for a name the hosts file lacks, ...).
 */
int tally_net_bind(struct tally_instance *inst, const char *what,
		   const struct tally_net_addr *a, int *fds, size_t maxfds,
		   struct tally_net_unix *u);

/**
 * tally_net_sockname() - the address a socket is bound to, as text
 * @fd:  a bound socket
 * @buf: "127.0.0.1:9464", "[::]:9464", "unix:/path"; port 0 resolved to
 *       the one the kernel chose
 * @len: size of @buf
 * Return: 0, or -1 with errno from getsockname(2) or EAFNOSUPPORT.
 */
int tally_net_sockname(int fd, char *buf, size_t len);

/*
 * Drain-then-yield reading
 */

/**
 * struct tally_net_drain_ops - how a struct tally_net_drain reads
 * @drain:   read at most @max items without blocking and handle them (emit
 *           one batch per call, not per item); return how many were read.
 *           Fewer than @max means the source looked empty.
 * @pending: optional: whether items may be waiting although the fd did not
 *           say so (libzmq's ZMQ_FD is a notification fd: call
 *           ZMQ_EVENTS here). NULL: the fd is level-triggered data (a
 *           socket, an epoll fd) and is trusted.
 *
 * Neither may free the struct tally_net_drain calling them.
 */
struct tally_net_drain_ops {
	unsigned (*drain)(void *arg, unsigned max);
	bool (*pending)(void *arg);
};

/**
 * struct tally_net_drain_stats - counters of one drain scheduler
 * @wakeups: times the loop woke up for it: the fd became readable or a
 *           cooldown expired (yields are loop turns, not wake-ups)
 * @drains:  calls of ops->drain
 * @items:   items the drains returned
 * @capped:  drains that hit the cap and yielded
 */
struct tally_net_drain_stats {
	uint64_t wakeups;
	uint64_t drains;
	uint64_t items;
	uint64_t capped;
};

struct tally_net_drain;

/**
 * tally_net_drain_new() - read a source in capped drains, coalescing
 * wake-ups
 * @inst:         counts "wakeups" and "drains" with tally_count_event()
 *                (NULL: not counted)
 * @base:         the event loop
 * @fd:           readable when items arrive (a socket, an epoll fd,
 *                ZMQ_FD); not owned
 * @max:          items per drain, >= 1 (max_messages_per_wakeup)
 * @min_interval: seconds (min_drain_interval); after a drain that read
 *                something without hitting @max, the next drain waits
 *                this long with @fd unwatched; 0 = no coalescing
 * @ops:          how to read (kept, not copied)
 * @arg:          passed to @ops
 *
 * The states, as zmq_trace has them:
 *   WAITING  - @fd watched; readable: drain.
 *   drain, then
 *     read @max:           YIELD, a 0 s timer: timers, scrapes and other
 *                          fds run before the next drain;
 *     read some, or
 *     ops->pending():      COOLDOWN, a @min_interval timer (a timerfd:
 *                          libevent 2.1's timers follow the 4 ms coarse
 *                          clock) with @fd not watched, then drain;
 *     read none:           WAITING.
 * A flood costs one drain of @max per loop turn and never starves the
 * loop; a trickle costs one wake-up per @min_interval, not one per item.
 * Loop thread only. Starts stopped: call tally_net_drain_start().
 * Return: the scheduler, or NULL with errno = ENOMEM, EINVAL (@max 0, no
 * ops->drain) or the errno of timerfd_create(2).
 */
struct tally_net_drain *
tally_net_drain_new(struct tally_instance *inst, struct event_base *base,
		    int fd, unsigned max, double min_interval,
		    const struct tally_net_drain_ops *ops, void *arg);

/**
 * tally_net_drain_start() - begin with a drain on the next loop turn
 * (whatever arrived before start is read), then follow the states above
 * Return: 0, or -1 with errno from event_add().
 */
int tally_net_drain_start(struct tally_net_drain *d);

/** tally_net_drain_stop() - unwatch everything; start again at will */
void tally_net_drain_stop(struct tally_net_drain *d);

/** tally_net_drain_get_stats() - copy the counters into @out */
void tally_net_drain_get_stats(const struct tally_net_drain *d,
			       struct tally_net_drain_stats *out);

/** tally_net_drain_free() - stop and free; NULL is a no-op */
void tally_net_drain_free(struct tally_net_drain *d);

/*
 * Listener: sockets read in capped drains, for datagram and line inputs
 */

/**
 * struct tally_net_listener_ops - what a listener hands its user
 * @item:    one item: a datagram, or one line of a stream connection
 *           without its "\n" (or "\r\n"); @data is valid during the call
 *           only and is not NUL-terminated
 * @drained: optional: after each drain that delivered @items >= 1 items:
 *           emit what they made, one batch per drain
 */
struct tally_net_listener_ops {
	void (*item)(void *arg, const char *data, size_t len);
	void (*drained)(void *arg, unsigned items);
};

/**
 * struct tally_net_listener_opts - settings of a listener; 0 = default
 * @max_items:       items per drain (default 256)
 * @min_interval:    seconds between drains unless one hit @max_items
 *                   (default 0: no coalescing)
 * @max_item:        largest item in bytes (default 65535, the largest UDP
 *                   payload); a longer datagram or line is dropped and
 *                   counted as "oversize"
 * @max_connections: streams: connections at once (default 64); at the
 *                   limit accepting pauses until one closes
 * @idle_timeout:    streams: seconds without a byte after which a
 *                   connection is closed (default 0: never)
 * @unix_mode:       unix addresses: socket file mode (default
 *                   tally_net_unix_mode(@unix_group))
 * @unix_group:      unix addresses: give the file the group @unix_gid
 * @unix_gid:        that group
 * @rcvbuf:          bytes of kernel receive buffer (SO_RCVBUF) each bound
 *                   socket asks for (default 0: the kernel's default);
 *                   beyond net.core.rmem_max it is forced (SO_RCVBUFFORCE)
 *                   where tallyd may (CAP_NET_ADMIN, as root before the
 *                   privilege drop), else capped by the kernel and the
 *                   size obtained logged once
 */
struct tally_net_listener_opts {
	unsigned max_items;
	double min_interval;
	size_t max_item;
	size_t max_connections;
	double idle_timeout;
	unsigned unix_mode;
	bool unix_group;
	gid_t unix_gid;
	size_t rcvbuf;
};

/**
 * struct tally_net_listener_stats - counters of one listener
 * @drain:      its drain scheduler's counters (items = lines/datagrams)
 * @oversize:   items dropped for being longer than max_item
 * @accepted:   stream connections accepted
 * @open:       stream connections open now
 * @idle_closed: stream connections closed by idle_timeout
 * @kernel_drops: datagrams the kernel dropped at the listener's sockets
 *              before they were read (receive buffer full), as
 *              SO_RXQ_OVFL reports them: a drop is seen with the next
 *              datagram that reaches the socket after it
 * @rcvbuf:     receive buffer of the first bound socket in bytes, as
 *              getsockopt(SO_RCVBUF) says (the kernel doubles what is
 *              asked, for its bookkeeping)
 */
struct tally_net_listener_stats {
	struct tally_net_drain_stats drain;
	uint64_t oversize;
	uint64_t accepted;
	uint64_t open;
	uint64_t idle_closed;
	uint64_t kernel_drops;
	size_t rcvbuf;
};

struct tally_net_listener;

/**
 * tally_net_listener_new() - bind a listen address and read it
 * @inst: for logs and counters: drops "oversize" (longer than
 *        max_item), "truncated" (a connection ended inside a line),
 *        "kernel_overflow" (datagrams the kernel dropped, receive buffer
 *        full: @kernel_drops of the stats), "accept_error", "nomem";
 *        events "wakeups", "drains", "idle_closed" (NULL: not counted)
 * @base: the event loop
 * @what: names the address in messages, e.g. "listen \"*:8125\""
 * @a:    a parsed listen address (TALLY_NET_LISTEN; UDP or stream)
 * @o:    settings (copied), or NULL for the defaults
 * @ops:  callbacks (kept, not copied)
 * @arg:  passed to @ops
 *
 * Binds with tally_net_bind(). Datagram sockets are read with recvmmsg(2),
 * one item per datagram, with SO_RXQ_OVFL on so that the kernel's drops
 * are counted; stream sockets accept connections whose bytes are
 * split into lines, a line longer than max_item dropped whole, and a last
 * line without a newline delivered when its connection ends. All sockets
 * of the listener share one drain scheduler (an epoll set), so the cap is
 * per listener, not per connection, and connections are served in turn.
 * Reading starts on the next loop turn. Loop thread only.
 * Return: the listener, or NULL with errno (as tally_net_bind(), or
 * ENOMEM); the reason is logged.
 */
struct tally_net_listener *
tally_net_listener_new(struct tally_instance *inst, struct event_base *base,
		       const char *what, const struct tally_net_addr *a,
		       const struct tally_net_listener_opts *o,
		       const struct tally_net_listener_ops *ops, void *arg);

/**
 * tally_net_listener_port() - the port bound (port 0 resolved), or 0 for
 * a unix address
 */
uint16_t tally_net_listener_port(const struct tally_net_listener *l);

/**
 * tally_net_listener_read_now() - read up to @max items at once, outside
 * the schedule (at stop: what is queued still counts)
 * Return: the number of items delivered.
 */
unsigned tally_net_listener_read_now(struct tally_net_listener *l,
				     unsigned max);

/** tally_net_listener_get_stats() - copy the counters into @out */
void tally_net_listener_get_stats(const struct tally_net_listener *l,
				  struct tally_net_listener_stats *out);

/**
 * tally_net_listener_free() - close every socket and connection (a line
 * still incomplete is dropped, counted as "truncated"), unlink a unix
 * socket file; NULL is a no-op
 */
void tally_net_listener_free(struct tally_net_listener *l);

/*
 * Reconnecting stream sender, for network outputs
 *
 * What "sent" means. A message handed to tally_net_sender_send() is
 * accepted whole (0) or refused whole (-1, EAGAIN: nothing was taken and
 * the caller keeps it; struct tally_output_ops.write returns EAGAIN and the
 * core keeps the batch queued). An accepted message belongs to the sender
 * until it is sent, that is until its last byte has been written to the
 * kernel's socket buffer (write(2) took it); it is never given up to make
 * room, only by tally_net_sender_free(). When a connection ends, messages
 * not yet sent go out on the next connection, in order. A message written
 * only in part is sent again from its start, or with a delimiter from just
 * after the last delimiter written: the part already written is an
 * unfinished record that the peer discards when the connection ends (the
 * line protocols of carbon, InfluxDB and statsd all do), so no record
 * reaches the peer twice. What the kernel held (our send buffer, the
 * peer's receive buffer, the wire) when the peer died or reset the
 * connection is lost without a trace: that, and only that, is the loss
 * window; bytes_sent counts it as sent. TCP keepalive and TCP_USER_TIMEOUT
 * bound how long a dead peer keeps a connection open.
 */

/**
 * struct tally_net_sender_opts - settings of a sender; 0 = default
 * @max_buffer:      bytes accepted and not yet sent beyond which send()
 *                   says EAGAIN (default 4 MiB); a message larger than
 *                   this is still taken when nothing else is waiting
 * @backoff_min:     seconds before the first retry (default 0.1)
 * @backoff_max:     cap of the exponential backoff (default 30 s); the
 *                   n-th consecutive failed attempt waits a uniformly
 *                   random time in [d/2, d], d = min(max, min * 2^(n-1))
 * @healthy:         seconds a connection must last before the backoff
 *                   starts again from @backoff_min (default 1): a server
 *                   that accepts and closes at once is retried with
 *                   growing delays, not in a busy loop
 * @connect_timeout: seconds a connect (all addresses of a name) may take
 *                   (default 10)
 * @keepalive:       seconds of idleness before TCP keepalive probes
 *                   (default 30; probes every third of it, 3 of them, and
 *                   TCP_USER_TIMEOUT the same total for unacknowledged
 *                   data); < 0 turns keepalive off
 * @delimiter:       the record separator of the protocol ('\n' for line
 *                   protocols), so that a message of many records written
 *                   in part is resent from its first unfinished record;
 *                   0: messages are the records
 * @stall_timeout:   seconds an established connection may take none of
 *                   the bytes waiting for it (the peer reads nothing: its
 *                   receive window stays closed, and TCP keepalive and
 *                   TCP_USER_TIMEOUT never fire, since the peer answers)
 *                   before it is taken as failed: logged once, naming the
 *                   peer, counted (@stalls, event "stalls"), closed, and
 *                   a new one made after the backoff, which sends what
 *                   the kernel did not take, as after any other end
 *                   (default 60; < 0: never)
 * @hold_when_down:  send() says EAGAIN, taking nothing, while no
 *                   connection is up (before the first one too), and
 *                   ready() follows once one is: what is produced during
 *                   an outage then waits in the caller's queue (an
 *                   output's: the core's, bounded in records, the oldest
 *                   dropped and counted) instead of the sender's buffer.
 *                   What the sender held when the connection ended still
 *                   goes first on the next one. false: messages are
 *                   accepted up to @max_buffer whether connected or not
 * @ready:           called (once) when send() said EAGAIN and there is
 *                   room again (buffered bytes fell to half of
 *                   @max_buffer, and with @hold_when_down a connection is
 *                   up); an output calls tally_output_ready()
 * @sent:            called (from the loop, may be NULL) when messages were
 *                   sent, their last byte written: the stats'
 *                   @records_buffered fell; an output tells the core with
 *                   tally_output_held(), so that shutdown waits for the
 *                   sender as for its queue, and no longer
 * @arg:             passed to @ready and @sent
 */
struct tally_net_sender_opts {
	size_t max_buffer;
	double backoff_min;
	double backoff_max;
	double healthy;
	double connect_timeout;
	double keepalive;
	double stall_timeout;
	char delimiter;
	bool hold_when_down;
	void (*ready)(void *arg);
	void (*sent)(void *arg);
	void *arg;
};

/**
 * struct tally_net_sender_stats - counters of one sender
 * @connects:         connections established
 * @connect_failures: attempts that reached no address of the server
 *                    (refused, unreachable, timed out, name not
 *                    resolved); each one starts a backoff
 * @reconnects:       connections established after an earlier one ended
 * @disconnects:      established connections that ended
 * @stalls:           of those, connections ended because the peer took
 *                    nothing for @stall_timeout seconds
 * @bytes_sent:       bytes written to the kernel (the resent start of a
 *                    message written in part counts again)
 * @bytes_resent:     of those, bytes written again after a connection
 *                    ended in the middle of a message
 * @messages_sent:    messages whose last byte was written
 * @records_sent:     of those, the sum of the records their senders
 *                    counted (tally_net_sender_send_records())
 * @buffered:         bytes accepted and not yet sent (now)
 * @records_buffered: records of the messages accepted and not yet sent
 *                    (now): what tally_net_sender_free() would discard,
 *                    in the caller's unit (points, lines, ...)
 * @connected:        a connection is established (now)
 * @backoff:          seconds the current wait before the next attempt
 *                    lasts (0 when not waiting)
 */
struct tally_net_sender_stats {
	uint64_t connects;
	uint64_t connect_failures;
	uint64_t reconnects;
	uint64_t disconnects;
	uint64_t stalls;
	uint64_t bytes_sent;
	uint64_t bytes_resent;
	uint64_t messages_sent;
	uint64_t records_sent;
	size_t buffered;
	uint64_t records_buffered;
	bool connected;
	double backoff;
};

struct tally_net_sender;

/**
 * tally_net_sender_new() - connect to a server, and keep connected
 * @inst:   for logs, and counters exported by the self input as
 *          tally_events_total{event="connects"|"connect_failures"|
 *          "reconnects"|"stalls"|"bytes_sent"} (NULL: not counted)
 * @base:   the event loop
 * @what:   names the server in messages, e.g. "server \"carbon:2003\""
 * @server: a parsed server address (stream: TCP or unix; no LISTEN)
 * @o:      settings (copied), or NULL for the defaults
 *
 * Connecting starts on the next loop turn: non-blocking connect(2) on a
 * libevent bufferevent; a NAME is resolved with evdns (one evdns base per
 * event loop, shared, reading /etc/resolv.conf and /etc/hosts) at every
 * attempt, and its addresses are tried in turn. Loop thread only.
 * Return: the sender, or NULL with errno = ENOMEM or EINVAL (a listen or
 * datagram address).
 */
struct tally_net_sender *
tally_net_sender_new(struct tally_instance *inst, struct event_base *base,
		     const char *what, const struct tally_net_addr *server,
		     const struct tally_net_sender_opts *o);

/**
 * tally_net_sender_send() - hand a message to the sender
 * @s:    the sender
 * @data: bytes (copied)
 * @len:  their length; 0 is accepted and does nothing
 *
 * Whether connected or not, unless the sender holds while down
 * (@hold_when_down). Loop thread only.
 * Return: 0 (accepted: see "what sent means" above), or -1 with errno =
 * EAGAIN (no room now, or no connection with @hold_when_down: nothing
 * taken; ready() follows) or ENOMEM.
 */
int tally_net_sender_send(struct tally_net_sender *s, const void *data,
			  size_t len);

/**
 * tally_net_sender_send_buffer() - tally_net_sender_send() of the whole of
 * @buf, moved without copying; @buf is left empty on success and
 * untouched on failure
 */
int tally_net_sender_send_buffer(struct tally_net_sender *s,
				 struct evbuffer *buf);

/**
 * tally_net_sender_send_records() - tally_net_sender_send_buffer() of a
 * message that carries @records records (points, lines: the caller's
 * unit)
 *
 * The sender counts them with the message: the stats' @records_sent when
 * it is sent, @records_buffered until then, so that an output counts
 * what is discarded at exit without keeping a ring of its own beside the
 * sender's. Same return and errno as tally_net_sender_send().
 */
int tally_net_sender_send_records(struct tally_net_sender *s,
				  struct evbuffer *buf, uint64_t records);

/**
 * tally_net_sender_get_stats() - copy the counters into @out
 */
void tally_net_sender_get_stats(const struct tally_net_sender *s,
				struct tally_net_sender_stats *out);

/**
 * tally_net_sender_free() - close the connection and free; NULL is a no-op
 *
 * Accepted messages not yet sent are discarded: check
 * tally_net_sender_get_stats()'s @buffered first and count them.
 */
void tally_net_sender_free(struct tally_net_sender *s);

/*
 * Datagram sender, for outputs that offer `protocol = "udp"`
 *
 * No connection, no delivery promise: a datagram the kernel takes is sent,
 * one it refuses (no room, or an ICMP "port unreachable" of an earlier
 * datagram) is lost and counted. Records are never split across
 * datagrams.
 */

/**
 * struct tally_net_dgram_stats - counters of one datagram sender
 * @datagrams:   datagrams the kernel took
 * @bytes:       their bytes
 * @send_errors: records of datagrams the kernel refused (counted as
 *               tally_dropped_total{reason="send_error"})
 * @oversize:    records longer than the datagram size, dropped
 *               (reason "oversize")
 */
struct tally_net_dgram_stats {
	uint64_t datagrams;
	uint64_t bytes;
	uint64_t send_errors;
	uint64_t oversize;
};

struct tally_net_dgram;

/**
 * tally_net_dgram_new() - a connected datagram socket to a server
 * @inst:         for logs and drop counters (NULL: the core's)
 * @what:         names the server in messages, e.g. "server \"x:2003\""
 * @server:       a numeric UDP address or a unix datagram socket (parsed
 *                with TALLY_NET_UDP, without LISTEN); a host name is not
 *                taken (no resolution here)
 * @max_datagram: bytes per datagram at most (1432 on Ethernet, 8932 with
 *                jumbo frames)
 *
 * Loop thread (the socket never blocks). Logs a failure.
 * Return: the sender, or NULL with errno = EINVAL (a stream, listen or
 * name address, @max_datagram 0), ENOMEM, or the errno of socket(2) or
 * connect(2).
 */
struct tally_net_dgram *tally_net_dgram_new(struct tally_instance *inst,
					    const char *what,
					    const struct tally_net_addr *server,
					    size_t max_datagram);

/**
 * tally_net_dgram_send() - send the records of @buf, packed into datagrams
 * @d:     the sender
 * @buf:   records, each ended by @delim (the last one may lack it); left
 *         empty on success, untouched on failure
 * @delim: the record separator ('\n' for line protocols)
 *
 * As many whole records per datagram as fit in max_datagram; a record
 * longer than that is dropped and counted ("oversize"); a datagram the
 * kernel refuses is counted ("send_error", in records) and logged.
 * Return: 0, or -1 with errno = ENOMEM (nothing sent).
 */
int tally_net_dgram_send(struct tally_net_dgram *d, struct evbuffer *buf,
			 char delim);

/** tally_net_dgram_get_stats() - copy the counters into @out */
void tally_net_dgram_get_stats(const struct tally_net_dgram *d,
			       struct tally_net_dgram_stats *out);

/** tally_net_dgram_free() - close and free; NULL is a no-op */
void tally_net_dgram_free(struct tally_net_dgram *d);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_NET_H */

/* SPDX-License-Identifier: MIT */
/*
 * t/unit/trace-fork.c - libtally-trace across fork()
 *
 * A child is a new source: its first call re-opens (new context, new
 * socket), its messages carry its own pid, and it starts with no open
 * spans; the parent carries on as before. Also: forking while another
 * thread of the parent is sending must neither deadlock nor lose the
 * children's events, and a grandchild works too.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zmq.h>

#include <tally/trace.h>
#include <tally/wire.h>

#include "tap.h"

static void *ctx, *pull;
static char endpoint[128];

static const char *sockdir;	/* tap_tmpdir(): removed at exit */

struct msg {
	int type;
	uint64_t id, parent;
	uint32_t pid, tid;
	char name[64];
};

/* Receive one event within @ms (tracers' CLOSE messages are skipped). */
static bool recv_msg(struct msg *m, int ms)
{
	uint8_t b[TALLY_WIRE_MAX_MSG];
	zmq_pollitem_t pi = { .socket = pull, .events = ZMQ_POLLIN };
	size_t tl, nl;
	int n;

	do {
		if (zmq_poll(&pi, 1, ms) != 1)
			return false;
		n = zmq_recv(pull, b, sizeof(b), 0);
		if (n < 52)
			return false;
	} while (b[3] == TALLY_WIRE_CLOSE);
	m->type = b[3];
	m->id = tally_wire_get64(b + 16);
	m->parent = tally_wire_get64(b + 24);
	m->pid = tally_wire_get32(b + 32);
	m->tid = tally_wire_get32(b + 36);
	tl = tally_wire_get16(b + 44);
	nl = tally_wire_get16(b + 46);
	if (nl >= sizeof(m->name) || 52 + tl + nl > (size_t)n)
		return false;
	memcpy(m->name, b + 52 + tl, nl);
	m->name[nl] = '\0';
	return true;
}

/* Child's own checks, reported through its exit status (bit per check). */
static int child_body(struct tally_trace *tr, uint64_t inherited)
{
	int fails = 0;
	uint64_t c;

	errno = 0;
	if (tally_trace_end(tr, inherited) != -1 || errno != ENOENT)
		fails |= 1; /* the parent's open span is not the child's */
	if (tally_trace_end_name(tr, "parent-outer") != -1)
		fails |= 2;
	c = tally_trace_begin(tr, "child");
	if (!c)
		fails |= 4;
	if (tally_trace_end(tr, c) != 0)
		fails |= 8;
	tally_trace_close(tr);
	return fails;
}

/* waitpid with a 30 s limit (then SIGKILL): a test must fail, not hang */
static bool wait_child(pid_t pid, int *status)
{
	for (int i = 0; i < 3000; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return false;
}

static void test_child(void)
{
	struct tally_trace *tr = tally_trace_open(endpoint, "fork");
	uint64_t outer, inner;
	struct msg m[8];
	int status, n = 0, fromchild = 0;
	pid_t child;

	outer = tally_trace_begin(tr, "parent-outer");
	/*
	 * Fork once the begin has arrived, when libzmq's I/O threads are
	 * idle: one caught sending holds the allocator's lock in the child
	 * under ASan (see test_fork_under_load for forks while busy).
	 */
	if (recv_msg(&m[n], 5000))
		n++;
	child = fork();
	if (child == 0)
		_exit(child_body(tr, outer));
	ok(child > 0, "fork");
	if (!wait_child(child, &status)) {
		diag("the child hung: killed");
		status = -1;
	}
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "child: no inherited spans, begin/end work (status %d)",
	   WEXITSTATUS(status));
	inner = tally_trace_begin(tr, "parent-inner");
	tally_trace_end(tr, inner);
	tally_trace_end(tr, outer);

	/* parent: begin outer, begin inner, end inner, end outer (4);
	 * child: END of the inherited id, begin child, end child (3) */
	while (n < 7 && recv_msg(&m[n], 5000))
		n++;
	cmp_ok(n, "==", 7, "7 messages");
	for (int i = 0; i < n; i++) {
		if (m[i].pid == (uint32_t)child) {
			fromchild++;
			ok(m[i].tid == (uint32_t)child,
			   "child message: tid is the child's");
			if (!strcmp(m[i].name, "child"))
				cmp_ok(m[i].parent, "==", 0,
				       "child's span is a root");
			continue;
		}
		cmp_ok(m[i].pid, "==", getpid(), "parent message: its pid");
		if (!strcmp(m[i].name, "parent-inner"))
			cmp_ok(m[i].parent, "==", outer,
			       "parent's stack survived the fork");
	}
	cmp_ok(fromchild, "==", 3, "3 messages from the child");
	tally_trace_close(tr);
}

/*
 * A child forked while another thread is inside ASan's allocator inherits
 * its lock held and hangs at its first malloc: a limit of the sanitizer
 * (glibc's malloc is fork-safe), so this test is built without it, in
 * every build (core/client/local.mk).
 */
struct spinner {
	struct tally_trace *tr;
	atomic_bool stop;
	long pairs;
};

static void *spin(void *arg)
{
	struct spinner *s = arg;

	while (!atomic_load(&s->stop)) {
		tally_trace_end(s->tr, tally_trace_begin(s->tr, "spin"));
		s->pairs++;
	}
	return NULL;
}

#define NCHILD 20

/* Fork repeatedly while another thread sends on the same tracer. */
static void test_fork_under_load(void)
{
	struct spinner s = { .tr = tally_trace_open(endpoint, "load") };
	pthread_t th;
	int fails = 0, got = 0, grand = 0, spins = 0;
	pid_t kids[NCHILD];
	struct msg m;

	pthread_create(&th, NULL, spin, &s);
	for (int i = 0; i < NCHILD; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			for (int j = 0; j < 10; j++)
				tally_trace_end(s.tr,
						tally_trace_begin(s.tr, "kid"));
			if (i == 0) {
				/* a grandchild re-opens again */
				pid_t g = fork();

				if (g == 0) {
					tally_trace_end(s.tr,
							tally_trace_begin(
								s.tr, "grand"));
					tally_trace_close(s.tr);
					_exit(0);
				}
				waitpid(g, NULL, 0);
			}
			tally_trace_close(s.tr);
			_exit(0);
		}
	}
	for (int i = 0; i < NCHILD; i++) {
		int status;

		if (kids[i] < 0 || !wait_child(kids[i], &status) ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			fails++;
	}
	atomic_store(&s.stop, true);
	pthread_join(th, NULL);
	cmp_ok(fails, "==", 0, "%d children forked under load exited 0",
	       NCHILD);
	while (recv_msg(&m, 1000)) {
		got += !strcmp(m.name, "kid");
		grand += !strcmp(m.name, "grand");
		spins += !strcmp(m.name, "spin");
	}
	cmp_ok(got, "==", NCHILD * 20, "all children's events arrived");
	cmp_ok(grand, "==", 2, "the grandchild's events arrived");
	diag("spinner sent %ld pairs meanwhile, %d messages seen", s.pairs,
	     spins);
	ok(spins > 0, "the parent's thread kept sending");
	tally_trace_close(s.tr);
}

int main(void)
{
	int hwm = 0;

	plan(NO_PLAN);
	sockdir = tap_tmpdir("tally-trace-fork");
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/t.sock", sockdir);
	ctx = zmq_ctx_new();
	pull = zmq_socket(ctx, ZMQ_PULL);
	zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	if (!pull || zmq_bind(pull, endpoint) < 0)
		bail_out("bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
	fflush(stdout);

	test_child();
	test_fork_under_load();

	zmq_close(pull);
	zmq_ctx_term(ctx);
	return done_testing();
}

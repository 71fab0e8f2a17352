/* SPDX-License-Identifier: MIT */
/*
 * t/trace-emit.c - send a scripted span sequence with libtally-trace
 *
 *	trace-emit [-p NPROC] [-T NTHREADS] [-n NEVENTS] ENDPOINT TRACE
 *[STEP...]
 *
 * ENDPOINT "-" discovers the collector, TRACE "-" uses the default trace
 * id (as tally_trace_open(NULL, NULL) would). Steps, in order:
 *	begin:NAME	open a span
 *	end:NAME	end the innermost open span named NAME (by name)
 *	endid:NAME	the same, by the id tally_trace_begin() returned
 *	sleep:MS	sleep MS milliseconds
 *	wait:PATH	wait until the file PATH exists (at most 120 s, then
 *			go on), so a test can hold spans open as long as it needs
 *	attr:KEY=N	an int64 attribute on the innermost open span
 *	fattr:KEY=X	a double attribute on it
 *	count:NAME:LABELS:N  tally_trace_counter_add() (LABELS may be empty)
 *	gauge:NAME:LABELS:X  tally_trace_gauge_set()
 *	flush		tally_trace_flush()
 * -n NEVENTS: after the steps, send NEVENTS events: begin/end pairs of a
 * span "e" (an odd count leaves the last one open).
 * -p NPROC: NPROC forked processes each open a tracer and do all the above;
 * -T NTHREADS: so do NTHREADS threads of each process, on one tracer.
 * -c: close with tally_trace_close_stats() and print its counts too.
 *
 * Each process prints, after closing its tracer:
 *	sent=N dropped=D unreported=U pid=P
 * (N events produced, D of them dropped by the client, U drops still not
 * reported to the collector after close), and with -p a last line
 *	total sent=N dropped=D unreported=U
 * With -c, each process also prints
 *	close unreported=U discarded_max=X pid=P
 * (U drops never told to the collector, at most X queued events close
 * discarded), and with -p a line "total close unreported=U discarded_max=X".
 * Exit status: 0, or 1 on a usage or setup error.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tally/trace.h>

struct emit {
	struct tally_trace *tr;
	int close_stats; /* -c */
	char **steps;
	int nsteps;
	long nevents;
};

static void msleep(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void *emit_run(void *arg)
{
	struct emit *e = arg;
	struct {
		const char *name;
		uint64_t id;
	} open[256];
	int depth = 0;

	for (int i = 0; i < e->nsteps; i++) {
		const char *s = e->steps[i];

		if (!strncmp(s, "begin:", 6)) {
			uint64_t id = tally_trace_begin(e->tr, s + 6);

			if (depth < 256)
				open[depth++] = (typeof(open[0])){ s + 6, id };
		} else if (!strncmp(s, "end:", 4)) {
			tally_trace_end_name(e->tr, s + 4);
		} else if (!strncmp(s, "endid:", 6)) {
			for (int j = depth; j-- > 0;) {
				if (strcmp(open[j].name, s + 6))
					continue;
				tally_trace_end(e->tr, open[j].id);
				open[j].name = "";
				break;
			}
		} else if (!strncmp(s, "sleep:", 6)) {
			msleep(atol(s + 6));
		} else if (!strncmp(s, "wait:", 5)) {
			for (int t = 0; t < 12000 && access(s + 5, F_OK); t++)
				msleep(10);
		} else if (!strncmp(s, "attr:", 5) ||
			   !strncmp(s, "fattr:", 6)) {
			char key[80];
			const char *eq = strchr(s, '=');
			const char *k = strchr(s, ':') + 1;

			snprintf(key, sizeof(key), "%.*s", (int)(eq - k), k);
			if (s[0] == 'a')
				tally_trace_attr_i64(e->tr, key, atoll(eq + 1));
			else
				tally_trace_attr_f64(e->tr, key,
						     strtod(eq + 1, NULL));
		} else if (!strncmp(s, "count:", 6) ||
			   !strncmp(s, "gauge:", 6)) {
			char name[80], labels[300];
			const char *c1 = strchr(s + 6, ':');
			const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

			if (!c2)
				continue;
			snprintf(name, sizeof(name), "%.*s",
				 (int)(c1 - s - 6), s + 6);
			snprintf(labels, sizeof(labels), "%.*s",
				 (int)(c2 - c1 - 1), c1 + 1);
			if (s[0] == 'c')
				tally_trace_counter_add(e->tr, name, labels,
							atoll(c2 + 1));
			else
				tally_trace_gauge_set(e->tr, name, labels,
						      strtod(c2 + 1, NULL));
		} else if (!strcmp(s, "flush")) {
			tally_trace_flush(e->tr);
		}
	}
	for (long i = 0; i < e->nevents; i += 2) {
		uint64_t id = tally_trace_begin(e->tr, "e");

		if (i + 1 < e->nevents)
			tally_trace_end(e->tr, id);
	}
	return NULL;
}

static int check_steps(char **steps, int n)
{
	static const char *const kinds[] = {
		"begin:", "end:",   "endid:", "sleep:", "wait:", "attr:",
		"fattr:", "count:", "gauge:", "flush",	NULL
	};

	for (int i = 0; i < n; i++) {
		int k;

		for (k = 0; kinds[k]; k++)
			if (!strncmp(steps[i], kinds[k], strlen(kinds[k])))
				break;
		if (!kinds[k]) {
			fprintf(stderr, "trace-emit: bad step '%s'\n",
				steps[i]);
			return -1;
		}
	}
	return 0;
}

/* One process: open, run the steps on @nthreads threads, close, report. */
static int emit_process(const char *endpoint, const char *trace, int nthreads,
			struct emit *e, int out)
{
	struct tally_trace_stats st = { 0 };
	struct tally_trace_close_stats cs;
	pthread_t th[256];
	char line[256];
	int n;

	e->tr = tally_trace_open(endpoint, trace);
	if (!e->tr) {
		fprintf(stderr, "trace-emit: open %s: %s\n",
			endpoint ? endpoint : "(discovery)", strerror(errno));
		return 1;
	}
	for (int i = 1; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, emit_run, e)) {
			fprintf(stderr, "trace-emit: pthread_create failed\n");
			return 1;
		}
	emit_run(e);
	for (int i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	/* close first: it may still report pending drops; stats before
	 * close tell what was produced and dropped */
	tally_trace_stats(e->tr, &st);
	tally_trace_close_stats(e->tr, &cs);
	n = snprintf(line, sizeof(line),
		     "sent=%llu dropped=%llu unreported=%llu pid=%ld\n",
		     (unsigned long long)st.events,
		     (unsigned long long)st.dropped,
		     (unsigned long long)st.unreported, (long)getpid());
	if (e->close_stats)
		n += snprintf(line + n, sizeof(line) - (size_t)n,
			      "close unreported=%llu discarded_max=%llu "
			      "pid=%ld\n",
			      (unsigned long long)cs.unreported,
			      (unsigned long long)cs.discarded_max,
			      (long)getpid());
	/* one write per line (< PIPE_BUF): forked siblings share @out */
	if (write(out, line, (size_t)n) != n)
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct emit e = { 0 };
	const char *endpoint, *trace;
	int nproc = 0, nthreads = 1, opt, rc = 0;
	unsigned long long tsent = 0, tdropped = 0, tunrep = 0;
	unsigned long long cunrep = 0, cdisc = 0;
	char buf[256];
	FILE *in;
	int fds[2];

	while ((opt = getopt(argc, argv, "p:T:n:c")) != -1) {
		switch (opt) {
		case 'c':
			e.close_stats = 1;
			break;
		case 'p':
			nproc = atoi(optarg);
			break;
		case 'T':
			nthreads = atoi(optarg);
			break;
		case 'n':
			e.nevents = atol(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind < 2 || nproc < 0 || nthreads < 1 || nthreads > 256)
		goto usage;
	endpoint = strcmp(argv[optind], "-") ? argv[optind] : NULL;
	trace = strcmp(argv[optind + 1], "-") ? argv[optind + 1] : NULL;
	e.steps = argv + optind + 2;
	e.nsteps = argc - optind - 2;
	if (check_steps(e.steps, e.nsteps) < 0)
		goto usage;
	if (!nproc)
		return emit_process(endpoint, trace, nthreads, &e,
				    STDOUT_FILENO);

	/* children report on a pipe; the parent echoes and adds up */
	if (pipe(fds) < 0)
		return 1;
	fflush(stdout);
	for (int i = 0; i < nproc; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 1;
		if (pid == 0) {
			close(fds[0]);
			_exit(emit_process(endpoint, trace, nthreads, &e,
					   fds[1]));
		}
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in && fgets(buf, sizeof(buf), in)) {
		unsigned long long s, d, u;

		fputs(buf, stdout);
		if (sscanf(buf, "close unreported=%llu discarded_max=%llu", &u,
			   &d) == 2) {
			cunrep += u;
			cdisc += d;
		}
		if (sscanf(buf, "sent=%llu dropped=%llu unreported=%llu", &s,
			   &d, &u) == 3) {
			tsent += s;
			tdropped += d;
			tunrep += u;
		}
	}
	for (int i = 0; i < nproc; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			rc = 1;
	}
	printf("total sent=%llu dropped=%llu unreported=%llu\n", tsent,
	       tdropped, tunrep);
	if (e.close_stats)
		printf("total close unreported=%llu discarded_max=%llu\n",
		       cunrep, cdisc);
	return rc;

usage:
	fprintf(stderr, "usage: trace-emit [-c] [-p NPROC] [-T NTHREADS] "
			"[-n NEVENTS] ENDPOINT|- TRACE|- [STEP...]\n"
			"steps: begin:NAME end:NAME endid:NAME sleep:MS\n");
	return 1;
}

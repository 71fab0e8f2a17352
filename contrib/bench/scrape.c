/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/scrape.c - timed HTTP scrapes of a /metrics endpoint
 *
 * Does N sequential GETs of http://127.0.0.1:PORT/PATH (HTTP/1.1,
 * "Connection: close", a new TCP connection each time, as Prometheus does
 * after an idle scrape interval), waiting GAP ms between them, and prints
 * the latency distribution (connect to last byte) and the response size.
 * With -p PID it also prints the server's CPU time per scrape, from
 * utime + stime of /proc/PID/stat before and after the run (clock ticks:
 * run enough scrapes that a tick is small against the total).
 *
 * usage: scrape -P PORT [-u PATH] [-n N] [-g GAP_MS] [-p PID] [-w WARMUP]
 * Prints one line:
 *   "scrapes=N p50_ms=A p90_ms=B min_ms=C bytes=D cpu_ms_per=E"
 * (cpu_ms_per only with -p). Exit 1 on any failed scrape.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* utime + stime of @pid in clock ticks (fields 14 and 15), or -1. */
static long long proc_cpu_ticks(int pid)
{
	char path[64], buf[4096], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields restart after the last
	 * ')' */
	if (!(p = strrchr(buf, ')')))
		return -1;
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		   &st) != 2)
		return -1;
	return (long long)(ut + st);
}

/* One scrape; returns the body+header bytes read, or -1. */
static long scrape_once(int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	static char buf[1 << 16];
	char req[512];
	long total = 0;
	ssize_t n;
	int status_ok = 0;
	int fd, len, one = 1;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	len = snprintf(req, sizeof(req),
		       "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		       "User-Agent: tally-bench\r\nAccept: text/plain\r\n"
		       "Connection: close\r\n\r\n",
		       path, port);
	if (write(fd, req, (size_t)len) != len)
		goto fail;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		/* Status line "HTTP/1.x 200" in the first read. */
		if (total == 0)
			status_ok = n >= 12 && memcmp(buf, "HTTP/1.", 7) == 0 &&
				    memcmp(buf + 9, "200", 3) == 0;
		total += n;
	}
	if (n < 0)
		goto fail;
	close(fd);
	if (!status_ok)
		return -1;
	return total;
fail:
	close(fd);
	return -1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *path = "/metrics";
	int port = 0, n = 50, gap_ms = 20, pid = 0, warmup = 3, opt;
	long long c0 = 0, c1 = 0;
	long bytes = 0;
	int64_t *lat;

	while ((opt = getopt(argc, argv, "P:u:n:g:p:w:")) != -1) {
		switch (opt) {
		case 'P':
			port = atoi(optarg);
			break;
		case 'u':
			path = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'g':
			gap_ms = atoi(optarg);
			break;
		case 'p':
			pid = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (port <= 0 || n <= 0)
		goto usage;
	if (!(lat = calloc((size_t)n, sizeof(*lat))))
		return 1;

	/* Warm-up scrapes: first-scrape costs (page faults, caches) excluded.
	 */
	for (int i = 0; i < warmup; i++)
		if (scrape_once(port, path) < 0) {
			fprintf(stderr, "scrape: GET :%d%s failed\n", port,
				path);
			return 1;
		}
	if (pid)
		c0 = proc_cpu_ticks(pid);
	for (int i = 0; i < n; i++) {
		int64_t t0 = bench_clock_ns(CLOCK_MONOTONIC);
		struct timespec gap = { gap_ms / 1000,
					(gap_ms % 1000) * 1000000L };

		bytes = scrape_once(port, path);
		lat[i] = bench_clock_ns(CLOCK_MONOTONIC) - t0;
		if (bytes < 0) {
			fprintf(stderr, "scrape: GET :%d%s failed\n", port,
				path);
			return 1;
		}
		nanosleep(&gap, NULL);
	}
	if (pid)
		c1 = proc_cpu_ticks(pid);
	qsort(lat, (size_t)n, sizeof(*lat), cmp_i64);
	printf("scrapes=%d p50_ms=%.3f p90_ms=%.3f min_ms=%.3f bytes=%ld", n,
	       (double)lat[n / 2] / 1e6, (double)lat[n * 9 / 10] / 1e6,
	       (double)lat[0] / 1e6, bytes);
	if (pid && c0 >= 0 && c1 >= 0)
		printf(" cpu_ms_per=%.3f",
		       (double)(c1 - c0) * 1000.0 /
			       (double)sysconf(_SC_CLK_TCK) / n);
	printf("\n");
	free(lat);
	return 0;

usage:
	fprintf(stderr, "usage: scrape -P PORT [-u PATH] [-n N] [-g GAP_MS] "
			"[-p PID] [-w WARMUP]\n");
	return 2;
}

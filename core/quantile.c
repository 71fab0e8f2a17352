/* SPDX-License-Identifier: MIT */
/*
 * core/quantile.c - nearest-rank quantiles (tally/quantile.h)
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include <tally/quantile.h>

double tally_quantile_sorted(const double *v, size_t n, double q)
{
	double k;

	if (!n)
		return NAN;
	if (!(q > 0))
		return v[0];
	if (q >= 1)
		return v[n - 1];
	/*
	 * q * n may land a hair above an integer (0.9 * 10 is
	 * 9.000000000000002): ceil() would then skip a rank. The slack is far
	 * below one rank for any number of values a process holds.
	 */
	k = ceil(q * (double)n - 1e-9);
	if (k < 1)
		k = 1;
	if (k > (double)n)
		k = (double)n;
	return v[(size_t)k - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void tally_quantiles(double *v, size_t n, const double *qs, size_t nq,
		     struct tally_quantile *out)
{
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_double);
	for (size_t i = 0; i < nq; i++) {
		out[i].q = qs[i];
		out[i].value = tally_quantile_sorted(v, n, qs[i]);
	}
}

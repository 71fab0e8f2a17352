/* SPDX-License-Identifier: MIT */
/*
 * tally/quantile.h - quantiles of a set of values, one definition for the
 * core and every plugin
 *
 * Definition (nearest rank): the q-quantile of n values sorted in
 * ascending order v[0] <= ... <= v[n-1] is v[k - 1] with k = ceil(q * n),
 * k at least 1: the smallest value such that at least a fraction q of the
 * values are <= it. It is always one of the values seen (never an
 * interpolation), so q = 0 gives the minimum, q = 1 the maximum, and
 * q = 0.5 of 1, 2, 3, 4 gives 2. Sample rates do not weight values: a
 * timer line sampled at 0.1 stands for ten events but is one value.
 *
 * Thread-safety: pure functions on the caller's arrays; any thread.
 */
#ifndef TALLY_QUANTILE_H
#define TALLY_QUANTILE_H

#include <stddef.h>

#include <tally/record.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * tally_quantile_sorted() - the q-quantile of sorted values
 * @v: @n values in ascending order, no NaN
 * @n: their number
 * @q: the quantile, in [0, 1] (clamped into it)
 *
 * Return: the value by the definition above, or NaN when @n is 0. Pure.
 */
double tally_quantile_sorted(const double *v, size_t n, double q);

/**
 * tally_quantiles() - sort values and take several quantiles of them
 * @v:   @n values, sorted in place (ascending); no NaN
 * @n:   their number (0: every quantile is NaN)
 * @qs:  @nq quantiles to compute, each in [0, 1], in any order
 * @out: room for @nq; out[i] = { qs[i], its value }
 *
 * Sorting costs O(n log n) once; each quantile is then O(1).
 */
void tally_quantiles(double *v, size_t n, const double *qs, size_t nq,
		     struct tally_quantile *out);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_QUANTILE_H */

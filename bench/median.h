/* The median of a benchmark's timings (the programs in bench/).  It sorts
 * v[0..n) in place, so v[0] is the fastest afterwards. */
#ifndef KF_BENCH_MEDIAN_H
#define KF_BENCH_MEDIAN_H

#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif

/* The float sum of one output of M, over L reduced elements x[0..L-1], as
 * the GPU kernels combine it (docs/codegen.md, Determinism): seq folds in
 * order up to 64 elements (unless warp takes the rows, kf_cg_warp_sizes:
 * callers' reduced dims are contiguous); else chunks of whole tiles of 4096
 * (kf_cg_red_chunks) in which lane j of 256 folds the groups of 4
 * consecutive elements starting at 4j, 4j + 1024, ... in order, then a
 * fixed tree per chunk, and the chunks the same way.  f32: every addition
 * is rounded to float (through double, which rounds a float sum exactly
 * once), else f64.  Needs codegen.h. */
#ifndef KF_TEST_GPU_ORDER_H
#define KF_TEST_GPU_ORDER_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static double gpu_order_add(double a, double b, bool f32) { return f32 ? (double)(float)(a + b) : a + b; }

static double gpu_order_tree(double *lane, bool f32)
{
    for (int s = KF_CG_BLOCK / 2; s > 0; s >>= 1)
        for (int j = 0; j < s; j++)
            lane[j] = gpu_order_add(lane[j], lane[j + s], f32);
    return lane[0];
}

static double gpu_order_sum(const double *x, int64_t L, int64_t M, bool f32)
{
    double acc = 0, lane[KF_CG_BLOCK];
    if (L <= KF_CG_SEQ_MAX && !kf_cg_warp_sizes((uint64_t)M, (uint64_t)L)) {
        for (int64_t i = 0; i < L; i++)
            acc = gpu_order_add(acc, x[i], f32);
        return acc;
    }
    uint64_t nc, ce;
    kf_cg_red_chunks((uint64_t)M, (uint64_t)L, &nc, &ce);
    double *part = malloc((size_t)nc * sizeof *part);
    if (!part)
        return NAN;
    for (int64_t t = 0; t < (int64_t)nc; t++) {
        for (int j = 0; j < KF_CG_BLOCK; j++)
            lane[j] = 0;
        for (int64_t e = 0; e < (int64_t)ce && t * (int64_t)ce + e < L; e++) {
            int j = (int)(e / KF_CG_RED_GROUP % KF_CG_BLOCK);
            lane[j] = gpu_order_add(lane[j], x[t * (int64_t)ce + e], f32);
        }
        part[t] = gpu_order_tree(lane, f32);
    }
    if (nc == 1) {
        acc = part[0];
    } else {
        for (int j = 0; j < KF_CG_BLOCK; j++) {
            lane[j] = 0;
            for (int64_t t = j; t < (int64_t)nc; t += KF_CG_BLOCK)
                lane[j] = gpu_order_add(lane[j], part[t], f32);
        }
        acc = gpu_order_tree(lane, f32);
    }
    free(part);
    return acc;
}

#endif

/* Session 20: put in front of the emitted boxplus module to swap its math
 * for the approximate forms (-DKF_FAST: __expf, __logf, __fdividef; -DKF_FAST_DIV:
 * the division alone), to see what the precise functions cost.  The
 * emitted body calls expf, logf and __fdiv_rn by name. */
#if defined(KF_FAST)
#define expf(x) __expf(x)
#define logf(x) __logf(x)
#endif
#if defined(KF_FAST) || defined(KF_FAST_DIV)
#define __fdiv_rn(x, y) __fdividef(x, y)
#endif

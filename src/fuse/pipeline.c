/* The fusion pipeline written out: one call per pass, in order, stopping
 * after the pass named by stop_after.  The passes' rules are in their own
 * files; plan.h holds the contract between them. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

const char *const kf_fuse_pass_names[] = { "verify", "fold", "cse", "dce", "partition", "schedule", NULL };

void kf_fuse_options_default(kf_fuse_options *o)
{
    if (!o)
        return;
    if (o->max_ops == 0)
        o->max_ops = 512;
    if (o->max_param_bytes == 0)
        o->max_param_bytes = 4000;
    if (o->recompute_max == 0)
        o->recompute_max = 16;
}

void kf_pipeline_clear(kf_pipeline *p)
{
    if (!p)
        return;
    if (p->plan)
        kf_plan_free(p->plan); /* owns p->g */
    else
        kf_graph_free(p->g);
    p->plan = NULL;
    p->g = NULL;
}

static bool known_pass(const char *name)
{
    for (int i = 0; kf_fuse_pass_names[i]; i++)
        if (strcmp(kf_fuse_pass_names[i], name) == 0)
            return true;
    return false;
}

static bool stop(const char *stop_after, const char *pass) { return stop_after && strcmp(stop_after, pass) == 0; }

static kf_status fail(kf_pipeline *p, kf_status s)
{
    kf_pipeline_clear(p);
    return s;
}

/* Arguments and options of kf_fuse and kf_fuse_owned. */
static kf_status start(const kf_graph *g, const kf_fuse_options *opt, const char *stop_after, kf_pipeline *p)
{
    memset(p, 0, sizeof *p);
    if (opt)
        p->opt = *opt;
    kf_fuse_options_default(&p->opt);
    if (!g) {
        snprintf(p->err, sizeof p->err, "kf_fuse: graph is NULL");
        return KF_ERR_INVALID_ARG;
    }
    if (stop_after && !known_pass(stop_after)) {
        size_t o = (size_t)snprintf(p->err, sizeof p->err, "kf_fuse: unknown pass '%s'; the passes are", stop_after);
        for (int i = 0; kf_fuse_pass_names[i] && o < sizeof p->err; i++)
            o += (size_t)snprintf(p->err + o, sizeof p->err - o, "%s %s", i ? "," : "", kf_fuse_pass_names[i]);
        return KF_ERR_INVALID_ARG;
    }
    return KF_OK;
}

/* The passes on p->g, in order. */
static kf_status run(kf_pipeline *p, const char *stop_after)
{
    kf_status s;
    if ((s = kf_pass_verify(p)) != KF_OK) return fail(p, s);
    if (stop(stop_after, "verify")) return KF_OK;
    if ((s = kf_pass_fold(p)) != KF_OK) return fail(p, s);
    if (stop(stop_after, "fold")) return KF_OK;
    if ((s = kf_pass_cse(p)) != KF_OK) return fail(p, s);
    if (stop(stop_after, "cse")) return KF_OK;
    if ((s = kf_pass_dce(p)) != KF_OK) return fail(p, s);
    if (stop(stop_after, "dce")) return KF_OK;
    if ((s = kf_pass_partition(p)) != KF_OK) return fail(p, s);
    p->g = p->plan->g;
    if (stop(stop_after, "partition")) return KF_OK;
    if ((s = kf_pass_schedule(p)) != KF_OK) return fail(p, s);
    return KF_OK;
}

kf_status kf_fuse(const kf_graph *g, const kf_fuse_options *opt, const char *stop_after, kf_pipeline *p)
{
    if (!p)
        return KF_ERR_INVALID_ARG;
    kf_status s = start(g, opt, stop_after, p);
    if (s != KF_OK)
        return s;
    if (!(p->g = kf_graph_clone(g))) {
        snprintf(p->err, sizeof p->err, "kf_fuse: out of memory copying graph '%s'", kf_graph_name(g));
        return KF_ERR_NO_MEMORY;
    }
    return run(p, stop_after);
}

kf_status kf_fuse_owned(kf_graph *g, const kf_fuse_options *opt, const char *stop_after, kf_pipeline *p)
{
    kf_status s = p ? start(g, opt, stop_after, p) : KF_ERR_INVALID_ARG;
    if (s != KF_OK) {
        kf_graph_free(g);
        return s;
    }
    atomic_store(&g->hash_at, 0); /* passes rewrite nodes in place */
    p->g = g;
    return run(p, stop_after);
}

/* Pass verify: the graph's kept builder error, or every node's dtype and
 * shape rules checked again, before any pass trusts them. */
#include "plan.h"

kf_status kf_pass_verify(kf_pipeline *p)
{
    kf_status s = kf_graph_verify(p->g);
    if (s == KF_OK)
        return KF_OK;
    kf_node n = kf_graph_error_node(p->g);
    char nm[80];
    if (n != KF_NONE && kf_ir_valid_node(p->g, n)) {
        kf_fuse_node_name(p->g, n, nm, sizeof nm);
        snprintf(p->err, sizeof p->err, "verify: graph '%s', node '%s': %s", kf_graph_name(p->g), nm,
                 kf_graph_error(p->g));
    } else {
        snprintf(p->err, sizeof p->err, "verify: graph '%s': %s", kf_graph_name(p->g), kf_graph_error(p->g));
    }
    return s;
}

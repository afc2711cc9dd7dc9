/* The baseline organisation: each SM has its own L1D. It still measures how often a fill copies
 * a line another L1D of its cluster holds, the replication the sharing techniques exploit. */
#include "techniques/l1d_sharing/cluster.h"

static int private_init(gcx_tech *t, gcx_error *err) { return gcx_cluster_init(t, sizeof(gcx_cluster), err); }

const gcx_technique gcx_tech_sharing_private = {
    .name = "private",
    .doc = "each SM has its own L1D (baseline)",
    .kind = GCX_TECH_L1D_SHARING,
    .init = private_init,
    .release = gcx_cluster_release,
    .l1_fill = gcx_cluster_fill,
    .report = gcx_cluster_report,
};

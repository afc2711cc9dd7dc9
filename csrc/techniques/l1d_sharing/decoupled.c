/* Decoupled-sharing (Ibrahim et al., HPCA 2021): the L1Ds of a cluster are decoupled from the SMs
 * and each serves one slice of the address space, so a line has one home L1D and is never
 * replicated. Every global request crosses the cluster crossbar to its home, which serves it as an
 * L1D does (hits, merges, misses to the L2, write-evict) and sends load data back. A home takes
 * one request a cycle, so SMs that want lines of the same home are served one after another, and
 * its data banks serialize what it takes. Local memory stays in the SM's own L1D. */
#include "techniques/l1d_sharing/cluster.h"

static int decoupled_init(gcx_tech *t, gcx_error *err) { return gcx_cluster_init(t, sizeof(gcx_cluster), err); }

/* The home of a line: the slice is taken from the line-address bits above the set index, so every
 * set of every home is used (with the mod index function). */
static inline uint32_t home_of(const gcx_gpu *g, const gcx_cluster *c, uint32_t sm, uint64_t addr)
{
    uint64_t la = addr >> g->l1_line_shift;
    return gcx_cluster_first(c, sm) + (uint32_t)((la / g->l1_sets) % c->size);
}

static int decoupled_request(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    gcx_cluster *c = t->state;
    if (r->space != GCX_SPACE_GLOBAL || c->size == 1)
        return GCX_L1_PRIVATE;
    r->home = home_of(t->gpu, c, sm, r->addr);
    r->cluster = GCX_CL_REQUEST;
    c->home_requests++;
    gcx_cluster_send(t->gpu, sm, r, now + 1);
    return GCX_FAIL_NONE;
}

static int decoupled_receive(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    gcx_gpu *g = t->gpu;
    if (r->cluster != GCX_CL_REQUEST) {
        g->fault = "decoupled-sharing received a cluster packet it never sends";
        gcx_req_free(g, r);
        return GCX_FAIL_NONE;
    }
    return gcx_l1_serve(g, &g->sms[sm], r, now);
}

const gcx_technique gcx_tech_sharing_decoupled = {
    .name = "decoupled",
    .doc = "decoupled-sharing: each line has one home L1D in the cluster, every request crosses the crossbar to it",
    .kind = GCX_TECH_L1D_SHARING,
    .init = decoupled_init,
    .release = gcx_cluster_release,
    .l1_request = decoupled_request,
    .cluster_receive = decoupled_receive,
    .l1_fill = gcx_cluster_fill,
    .report = gcx_cluster_report,
};

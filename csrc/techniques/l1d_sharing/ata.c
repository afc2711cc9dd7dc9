/* ATA-Cache (Xu et al.): the tag arrays of a cluster's L1Ds are aggregated, so every global read is
 * compared with all of them in parallel, without probe messages. A local hit is served locally; a
 * local miss whose line another L1D holds reads that L1D's data array through the cluster crossbar
 * and fills the data locally too; otherwise it goes to the L2. Writes are handled only by the local
 * L1D. A remote line that changed (was evicted or invalidated) before the read arrives sends the
 * read to the L2 (a fallback). Shared-memory, local and atomic accesses behave as in a private L1D.
 *
 * With allocate-on-miss a line being fetched already has its tag, so the aggregated tag array sees
 * it too: when no L1D holds the data yet, a miss may wait for another L1D's fetch of the line (in
 * that L1D's MSHR entry, like a merged miss) instead of fetching it from the L2 a second time. The
 * data then reaches both L1Ds. Only an entry that itself waits on no other L1D can be waited on, so
 * waits never form a cycle. */
#include "techniques/l1d_sharing/cluster.h"

static int ata_init(gcx_tech *t, gcx_error *err)
{
    int rc = gcx_cluster_init(t, sizeof(gcx_cluster), err);
    if (rc == GCX_OK)
        ((gcx_cluster *)t->state)->aggregated_tags = 1;
    return rc;
}

static int ata_request(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    gcx_cluster *c = t->state;
    if (r->type != GCX_REQ_READ || r->space != GCX_SPACE_GLOBAL || c->size == 1)
        return GCX_L1_PRIVATE;
    return gcx_l1_access_private(t->gpu, &t->gpu->sms[sm], r, now);
}

/* Send fetch f (of `sm`'s L1D) to read the line in the L1D of `holder`, the next cycle. */
static void read_remote(gcx_gpu *g, uint32_t sm, uint32_t holder, gcx_req *f, uint64_t now)
{
    f->home = holder;
    f->cluster = GCX_CL_READ;
    gcx_cluster_send(g, sm, f, now + 1);
}

/* The distributor's choice for a miss of `sm` on `sectors` of addr's line: the first other L1D (from
 * the requester on) that holds every one of them, else the first that is fetching them and can be
 * waited on (*wait set), else GCX_NONE (the L2). */
static uint32_t ata_source(gcx_gpu *g, const gcx_cluster *c, uint32_t sm, uint64_t addr, uint8_t sectors,
                           int *wait)
{
    *wait = 0;
    for (uint32_t k = 1; k < c->size; k++) {
        uint32_t j = gcx_cluster_other(c, sm, k);
        if (gcx_l1_holds(g, j, addr, sectors) != GCX_NONE)
            return j;
    }
    for (uint32_t k = 1; k < c->size; k++) {
        uint32_t j = gcx_cluster_other(c, sm, k);
        if (gcx_l1_fetching(g, j, addr, sectors) != GCX_NONE) {
            *wait = 1;
            return j;
        }
    }
    return GCX_NONE;
}

/* A miss the aggregated tag array routes to another L1D never enters the miss queue to the L2. */
static int ata_fetch_in_cluster(gcx_tech *t, uint32_t sm, const gcx_req *r, uint8_t sectors)
{
    int wait;
    return r->space == GCX_SPACE_GLOBAL && ata_source(t->gpu, t->state, sm, r->addr, sectors, &wait) != GCX_NONE;
}

/* The tag comparison already happened, so the read goes out the next cycle. */
static int ata_fetch(gcx_tech *t, uint32_t sm, gcx_req *f, uint64_t now)
{
    if (f->space != GCX_SPACE_GLOBAL)
        return 0;
    gcx_gpu *g = t->gpu;
    int wait;
    uint32_t j = ata_source(g, t->state, sm, f->addr, f->sectors, &wait);
    if (j == GCX_NONE)
        return 0;
    if (wait)
        g->sms[sm].l1.mshr.e[f->mshr].remote_wait = 1;
    read_remote(g, sm, j, f, now);
    return 1;
}

static int ata_receive(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    gcx_cluster *c = t->state;
    gcx_gpu *g = t->gpu;
    switch (r->cluster) {
    case GCX_CL_READ: {
        /* At the remote L1D: the data is read unless the line changed since the comparison. */
        uint32_t line = gcx_l1_holds(g, sm, r->addr, r->sectors);
        uint32_t entry = line == GCX_NONE ? gcx_l1_fetching(g, sm, r->addr, r->sectors) : GCX_NONE;
        if (entry != GCX_NONE) {
            c->remote_waits++; /* answered when this L1D's own fetch arrives */
            gcx_l1_wait_fill(g, sm, entry, r, now);
        } else if (line == GCX_NONE) {
            /* The line changed since the comparison, or it is still being fetched by an entry that can
             * take no more waiting requests: either way the read goes to the L2. */
            if (gcx_l1_being_fetched(g, sm, r->addr, r->sectors))
                c->wait_refusals++;
            else
                c->fallbacks++;
            r->cluster = GCX_CL_MISS;
            gcx_cluster_send(g, sm, r, now + 1);
        } else {
            c->remote_reads++;
            r->cluster = GCX_CL_DATA;
            gcx_cluster_send(g, sm, r, gcx_l1_data_read(g, sm, line, r, now));
        }
        return GCX_FAIL_NONE;
    }
    case GCX_CL_DATA: /* back at the requester: fill the local line, answer the waiting loads */
        if (r->flags & GCX_RF_REMOTE_WAIT)
            c->remote_pending_hits++;
        else
            c->remote_hits++;
        gcx_l1_reply(g, &g->sms[sm], r, now);
        return GCX_FAIL_NONE;
    case GCX_CL_MISS:
        gcx_l1_fetch_l2(g, sm, r, now);
        return GCX_FAIL_NONE;
    default:
        g->fault = "ATA received a cluster packet it never sends";
        gcx_req_free(g, r);
        return GCX_FAIL_NONE;
    }
}

const gcx_technique gcx_tech_sharing_ata = {
    .name = "ata",
    .doc = "ATA-Cache: aggregated tag array, remote data through the cluster crossbar with a local fill",
    .kind = GCX_TECH_L1D_SHARING,
    .init = ata_init,
    .release = gcx_cluster_release,
    .l1_request = ata_request,
    .l1_fetch = ata_fetch,
    .l1_fetch_in_cluster = ata_fetch_in_cluster,
    .cluster_receive = ata_receive,
    .l1_fill = gcx_cluster_fill,
    .report = gcx_cluster_report,
};

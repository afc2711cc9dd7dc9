/* Services of the L1D sharing techniques: their state, the replication statistics and the common
 * metrics (local and remote hits, L1 latency per load instruction, cluster traffic counters). */
#include <math.h>
#include <stdlib.h>

#include "techniques/l1d_sharing/cluster.h"

int gcx_cluster_init(gcx_tech *t, size_t state_bytes, gcx_error *err)
{
    gcx_cluster *c = calloc(1, state_bytes);
    if (!c)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the %s technique", t->ops->name);
    c->size = (uint32_t)t->gpu->cfg.l1d_cluster_size;
    t->state = c;
    return GCX_OK;
}

void gcx_cluster_release(gcx_tech *t)
{
    free(t->state);
    t->state = NULL;
}

void gcx_cluster_fill(gcx_tech *t, uint32_t sm, uint32_t line, const gcx_req *f, uint64_t now)
{
    gcx_cluster *c = t->state;
    if (f->space != GCX_SPACE_GLOBAL)
        return; /* local memory is private to a thread: never shared */
    /* Only measured: the sample must not change the run (private L1Ds give the same results for
     * every cluster size), so it looks without a lookup. */
    uint32_t copies = 1;
    for (uint32_t k = 1; k < c->size; k++)
        copies += (uint32_t)gcx_l1_has_copy(t->gpu, gcx_cluster_other(c, sm, k), f->addr, now);
    c->fills++;
    c->fill_copies += copies;
    c->replicated_fills += copies > 1;
}

/* a / b, NaN when b is zero: a mean or rate over nothing (no fill, no access, no load) is undefined,
 * and 0 would read as measured. */
static double ratio(double a, double b) { return b != 0.0 ? a / b : NAN; }

void gcx_cluster_report(gcx_tech *t, gcx_stat_sink *sink)
{
    const gcx_cluster *c = t->state;
    const gcx_gpu *g = t->gpu;
    uint64_t hits = 0, accesses = 0, lat = 0, loads = 0, remote_tags = c->remote_tag_lookups;
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        if (c->aggregated_tags)
            remote_tags += g->sms[i].l1.global_read_lookups * (c->size - 1);
        hits += g->sms[i].l1.tc.s.hits;
        accesses += g->sms[i].l1.tc.s.accesses;
        lat += g->sms[i].load_latency_sum;
        loads += g->sms[i].loads_done;
    }
    sink->put(sink, "l1d_remote_hits", (double)c->remote_hits);
    sink->put(sink, "l1d_remote_reads", (double)c->remote_reads);
    sink->put(sink, "l1d_remote_tag_lookups", (double)remote_tags);
    sink->put(sink, "l1d_probes", (double)c->probes);
    sink->put(sink, "l1d_remote_fallbacks", (double)c->fallbacks);
    sink->put(sink, "l1d_remote_wait_refusals", (double)c->wait_refusals);
    sink->put(sink, "l1d_remote_waits", (double)c->remote_waits);
    sink->put(sink, "l1d_remote_pending_hits", (double)c->remote_pending_hits);
    sink->put(sink, "l1d_home_requests", (double)c->home_requests);
    sink->put(sink, "l1d_global_fills", (double)c->fills);
    sink->put(sink, "l1d_replication", ratio((double)c->fill_copies, (double)c->fills));
    sink->put(sink, "l1d_replicated_fill_fraction", ratio((double)c->replicated_fills, (double)c->fills));
    /* Local and remote hits over the accesses of all L1Ds (a remote hit is a local miss). */
    sink->put(sink, "l1_hit_rate", ratio((double)(hits + c->remote_hits), (double)accesses));
    /* Issue of a load (or atomic) instruction to its last answer, averaged over instructions. */
    sink->put(sink, "l1_latency_avg", ratio((double)lat, (double)loads));
}

/* What the L1D sharing techniques have in common: the cluster an SM belongs to, the statistics
 * every one of them reports (a private run has the same metrics as a shared one, so they can be
 * compared column by column), and the replication sample taken at each fill. */
#ifndef GCX_SHARING_CLUSTER_H
#define GCX_SHARING_CLUSTER_H

#include "sim/gpu.h"

/* The state of every sharing technique starts with this. */
typedef struct gcx_cluster {
    uint32_t size;               /* SMs per cluster (l1d.cluster_size) */
    uint64_t remote_hits;        /* local misses whose data came from another L1D of the cluster */
    uint64_t remote_reads;       /* data-array reads for another SM's request */
    uint64_t remote_tag_lookups; /* tag comparisons in the other L1Ds by probes (remote-sharing) */
    int aggregated_tags;         /* ATA: every tag lookup of a global read, refused attempts included,
                                    also compares the cluster's other tag arrays */
    uint64_t probes;             /* probe messages sent (remote-sharing) */
    uint64_t fallbacks;          /* remote reads that found the line changed and went to the L2 */
    uint64_t wait_refusals;      /* remote reads that found the line still being fetched by an entry
                                    that could take no more waiting requests, and went to the L2 */
    uint64_t remote_waits;       /* remote reads that waited for the remote L1D's own fetch (ATA) */
    uint64_t remote_pending_hits; /* local misses whose data came from such a wait */
    uint64_t home_requests;      /* requests sent to their home L1D (decoupled) */
    uint64_t fills;              /* fills of global lines */
    uint64_t fill_copies;        /* copies of the line in the cluster's L1Ds after each of them */
    uint64_t replicated_fills;   /* ... that copied a line another L1D of the cluster held */
} gcx_cluster;

/* The first SM of sm's cluster. */
static inline uint32_t gcx_cluster_first(const gcx_cluster *c, uint32_t sm) { return sm - sm % c->size; }

/* The k-th other member of sm's cluster (k = 1 .. size-1), in turn from sm on. */
static inline uint32_t gcx_cluster_other(const gcx_cluster *c, uint32_t sm, uint32_t k)
{
    uint32_t first = gcx_cluster_first(c, sm);
    return first + (sm - first + k) % c->size;
}

/* Allocate a zeroed state of `state_bytes` (at least sizeof(gcx_cluster)) into t->state. */
int gcx_cluster_init(gcx_tech *t, size_t state_bytes, gcx_error *err);
void gcx_cluster_release(gcx_tech *t);
/* l1_fill hook: count the copies of a global line in its cluster after a fill. */
void gcx_cluster_fill(gcx_tech *t, uint32_t sm, uint32_t line, const gcx_req *f, uint64_t now);
/* report hook: the metrics every sharing technique gives. */
void gcx_cluster_report(gcx_tech *t, gcx_stat_sink *sink);

#endif

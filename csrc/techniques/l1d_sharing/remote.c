/* Remote-sharing (cooperative caching, Dublish et al.; Ibrahim et al., PACT 2019): every L1D maps
 * the whole address space. A local miss sends a probe to every other L1D of the cluster over the
 * cluster network; each looks the line up in its tag array (a port for remote probes, one a cycle)
 * and answers with the data or a miss. The first data answer fills the local line; only when every
 * answer is a miss does the fetch go to the L2, so probing lengthens the path of every L2 access. */
#include <stdlib.h>

#include "techniques/l1d_sharing/cluster.h"

/* A fetch whose probes are out. */
typedef struct probe_set {
    gcx_req *fetch;   /* held until it is filled from a probe or sent to the L2 (then NULL) */
    uint32_t pending; /* answers still to come */
    uint32_t next_free;
    int hit;
} probe_set;

typedef struct remote_state {
    gcx_cluster c;
    probe_set *sets;
    uint32_t cap, free;
} remote_state;

static int grow(remote_state *st)
{
    uint32_t cap = st->cap ? 2 * st->cap : 64;
    probe_set *s = realloc(st->sets, cap * sizeof *s);
    if (!s)
        return GCX_ERR_NOMEM;
    for (uint32_t i = st->cap; i < cap; i++)
        s[i] = (probe_set){.next_free = i + 1 < cap ? i + 1 : st->free};
    st->free = st->cap;
    st->sets = s;
    st->cap = cap;
    return GCX_OK;
}

static int remote_init(gcx_tech *t, gcx_error *err)
{
    int rc = gcx_cluster_init(t, sizeof(remote_state), err);
    if (rc)
        return rc;
    remote_state *st = t->state;
    st->free = GCX_NONE;
    if (grow(st) != GCX_OK)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for remote-sharing probes");
    return GCX_OK;
}

static void remote_release(gcx_tech *t)
{
    remote_state *st = t->state;
    if (st)
        free(st->sets);
    gcx_cluster_release(t);
}

static int remote_fetch(gcx_tech *t, uint32_t sm, gcx_req *f, uint64_t now)
{
    remote_state *st = t->state;
    gcx_gpu *g = t->gpu;
    if (f->space != GCX_SPACE_GLOBAL || st->c.size == 1)
        return 0;
    if (st->free == GCX_NONE && grow(st) != GCX_OK) {
        g->oom = 1; /* the run stops with an out-of-memory error at the end of the cycle */
        return 0;
    }
    uint32_t i = st->free;
    st->free = st->sets[i].next_free;
    st->sets[i] = (probe_set){.fetch = f, .pending = st->c.size - 1};
    for (uint32_t k = 1; k < st->c.size; k++) {
        gcx_req *p = gcx_req_new(g);
        p->addr = f->addr;
        p->words = f->words;
        p->sectors = f->sectors;
        p->type = GCX_REQ_READ;
        p->space = f->space;
        p->pc = f->pc;
        p->lanes = f->lanes;
        p->sm = sm;
        p->home = gcx_cluster_other(&st->c, sm, k);
        p->line = i; /* the probe set it answers */
        p->cluster = GCX_CL_PROBE;
        gcx_cluster_send(g, sm, p, now + 1);
        st->c.probes++;
    }
    return 1;
}

static int remote_receive(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    remote_state *st = t->state;
    gcx_gpu *g = t->gpu;
    if (r->cluster == GCX_CL_PROBE) {
        /* At a remote L1D: a tag lookup; the data follows after a data-array read. */
        st->c.remote_tag_lookups++;
        uint32_t line = gcx_l1_holds(g, sm, r->addr, r->sectors);
        if (line != GCX_NONE) {
            st->c.remote_reads++;
            r->cluster = GCX_CL_DATA;
            gcx_cluster_send(g, sm, r, gcx_l1_data_read(g, sm, line, r, now));
        } else {
            r->cluster = GCX_CL_MISS;
            gcx_cluster_send(g, sm, r, now + 1);
        }
        return GCX_FAIL_NONE;
    }
    if ((r->cluster != GCX_CL_DATA && r->cluster != GCX_CL_MISS) || r->line >= st->cap ||
        st->sets[r->line].pending == 0) {
        g->fault = "remote-sharing received an answer to no probe";
        gcx_req_free(g, r);
        return GCX_FAIL_NONE;
    }
    uint32_t i = r->line;
    probe_set *ps = &st->sets[i];
    if (r->cluster == GCX_CL_DATA && !ps->hit) {
        gcx_req *f = ps->fetch;
        ps->hit = 1;
        ps->fetch = NULL;
        st->c.remote_hits++;
        gcx_l1_reply(g, &g->sms[sm], f, now);
        ps = &st->sets[i];
    }
    gcx_req_free(g, r);
    if (--ps->pending == 0) {
        if (!ps->hit)
            gcx_l1_fetch_l2(g, sm, ps->fetch, now);
        ps->fetch = NULL;
        ps->next_free = st->free;
        st->free = i;
    }
    return GCX_FAIL_NONE;
}

const gcx_technique gcx_tech_sharing_remote = {
    .name = "remote",
    .doc = "remote-sharing: a local miss probes the cluster's other L1Ds and goes to the L2 after all answered",
    .kind = GCX_TECH_L1D_SHARING,
    .init = remote_init,
    .release = remote_release,
    .l1_fetch = remote_fetch,
    .cluster_receive = remote_receive,
    .l1_fill = gcx_cluster_fill,
    .report = gcx_cluster_report,
};

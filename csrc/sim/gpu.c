/* The GPU: builds the components from the configuration, runs the kernels of a workload in order,
 * and drives the cycle loop. Components tick in reverse pipeline order (DRAM, L2, L1D, SMs) so a
 * request moves at most one stage per cycle. When a cycle makes no progress, the loop jumps to the
 * earliest cycle at which any component can act, accounting the skipped cycles (LD/ST retries,
 * time-series samples) as if they had been simulated one by one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

/* ---- request pool ------------------------------------------------------------------------- */

#define GCX_SLAB 4096

static int grow_pool(gcx_gpu *g)
{
    if (g->n_slabs == g->slab_cap) {
        uint32_t cap = g->slab_cap ? g->slab_cap * 2 : 16;
        gcx_req **s = realloc(g->req_slabs, cap * sizeof *s);
        if (!s)
            return GCX_ERR_NOMEM;
        g->req_slabs = s;
        g->slab_cap = cap;
    }
    gcx_req *slab = malloc(GCX_SLAB * sizeof *slab);
    if (!slab)
        return GCX_ERR_NOMEM;
    g->req_slabs[g->n_slabs++] = slab;
    for (int i = GCX_SLAB - 1; i >= 0; i--) {
        slab[i].next = g->free_reqs;
        g->free_reqs = &slab[i];
    }
    g->n_free_reqs += GCX_SLAB;
    return GCX_OK;
}

/* The pool keeps a spare slab: if growing fails, the spare (more than one cycle can use) carries
 * the run to the end of the cycle, and the loop then stops with an out-of-memory error. */
gcx_req *gcx_req_new(gcx_gpu *g)
{
    if (g->n_free_reqs < GCX_SLAB && !g->oom && grow_pool(g) != GCX_OK)
        g->oom = 1;
    g->n_free_reqs--;
    gcx_req *r = g->free_reqs;
    g->free_reqs = r->next;
    memset(r, 0, sizeof *r);
    r->load = GCX_NONE;
    r->line = GCX_NONE;
    r->tech[0] = r->tech[1] = -1;
    g->reqs_live++;
    return r;
}

void gcx_req_free(gcx_gpu *g, gcx_req *r)
{
    g->n_free_reqs++;
    r->next = g->free_reqs;
    g->free_reqs = r;
    g->reqs_live--;
}

/* ---- construction ------------------------------------------------------------------------- */

int gcx_gpu_init(gcx_gpu *g, const gcx_gpu_config *cfg, const gcx_workload *wl, uint64_t seed, gcx_error *err)
{
    memset(g, 0, sizeof *g);
    int rc = gcx_config_check(cfg, err);
    if (rc)
        return rc;
    g->cfg = *cfg;
    g->wl = wl;
    g->seed = seed;
    gcx_rng_seed(&g->rng, seed);
    const gcx_gpu_config *c = &g->cfg;
    g->l1_sets = (uint32_t)(c->l1d_size_kb * 1024.0 / (double)(c->l1d_ways * c->l1d_line_bytes));
    g->l2_sets = (uint32_t)(c->l2_size_kb * 1024.0 / (double)(c->l2_ways * c->l2_line_bytes * c->l2_partitions));
    g->l2_per_channel = (uint32_t)(c->l2_partitions / c->dram_channels);
    g->l1_line_shift = gcx_log2((uint64_t)c->l1d_line_bytes);
    g->l2_line_shift = gcx_log2((uint64_t)c->l2_line_bytes);

    /* Techniques: the configuration holds the registry index of each kind's choice. */
    int64_t chosen[GCX_N_TECH_KINDS] = {c->l1d_admission, c->l1d_power, c->l2_power, c->l1d_sharing};
    for (int kind = 0; kind < GCX_N_TECH_KINDS; kind++) {
        gcx_tech *t = &g->tech[kind];
        t->ops = gcx_techniques[chosen[kind]];
        t->gpu = g;
        for (int p = 0; p < t->ops->n_params && p < GCX_TECH_MAX_PARAMS; p++)
            t->params[p] = gcx_config_param(c, t->ops->params[p].name);
    }

    uint32_t n_sms = (uint32_t)c->sms, n_parts = (uint32_t)c->l2_partitions, n_ch = (uint32_t)c->dram_channels;
    g->sms = calloc(n_sms, sizeof *g->sms);
    g->l2 = calloc(n_parts, sizeof *g->l2);
    g->dram = calloc(n_ch, sizeof *g->dram);
    if (!g->sms || !g->l2 || !g->dram)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory building the GPU");
    rc = gcx_xbar_init(&g->req_net, n_sms, n_parts, (uint32_t)c->icnt_latency, (uint32_t)c->icnt_flit_bytes,
                       (uint32_t)c->icnt_flits_per_cycle, (uint32_t)c->icnt_buffer, err);
    if (rc)
        return rc;
    rc = gcx_xbar_init(&g->reply_net, n_parts, n_sms, (uint32_t)c->icnt_latency, (uint32_t)c->icnt_flit_bytes,
                       (uint32_t)c->icnt_flits_per_cycle, (uint32_t)c->icnt_buffer, err);
    if (rc)
        return rc;
    /* The cluster network: a request channel and a reply channel per SM (see gpu.h). */
    rc = gcx_xbar_init(&g->cluster_net, 2 * n_sms, 2 * n_sms, (uint32_t)c->cluster_latency, (uint32_t)c->icnt_flit_bytes,
                       (uint32_t)c->cluster_flits_per_cycle, UINT32_MAX, err);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < n_sms; i++)
        if ((rc = gcx_sm_init(g, &g->sms[i], i, err)))
            return rc;
    for (uint32_t p = 0; p < n_parts; p++)
        if ((rc = gcx_l2_init(g, p, err)))
            return rc;
    for (uint32_t ch = 0; ch < n_ch; ch++)
        if ((rc = gcx_dram_init(g, ch, err)))
            return rc;
    for (int kind = 0; kind < GCX_N_TECH_KINDS; kind++) {
        gcx_tech *t = &g->tech[kind];
        if (t->ops->init && (rc = t->ops->init(t, err)))
            return rc;
    }
    g->ts_next = 0;
    if (grow_pool(g) != GCX_OK || grow_pool(g) != GCX_OK)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the request pool");
    return GCX_OK;
}

void gcx_gpu_free(gcx_gpu *g)
{
    for (int kind = 0; kind < GCX_N_TECH_KINDS; kind++)
        if (g->tech[kind].ops && g->tech[kind].ops->release)
            g->tech[kind].ops->release(&g->tech[kind]);
    if (g->sms)
        for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++)
            gcx_sm_free(&g->sms[i]);
    if (g->l2)
        for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++)
            gcx_l2_free(&g->l2[p]);
    if (g->dram)
        for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++)
            gcx_dram_free(&g->dram[ch]);
    free(g->sms);
    free(g->l2);
    free(g->dram);
    gcx_xbar_free(&g->req_net);
    gcx_xbar_free(&g->reply_net);
    gcx_xbar_free(&g->cluster_net);
    for (uint32_t i = 0; i < g->n_slabs; i++)
        free(g->req_slabs[i]);
    free(g->req_slabs);
    free(g->ts);
    memset(g, 0, sizeof *g);
}

/* ---- kernels and CTAs --------------------------------------------------------------------- */

/* Resident CTAs per SM for a kernel: the tightest of the CTA, thread, warp, register and shared
 * memory limits, with threads and registers counted as GPGPU-Sim's max_cta counts them (a CTA
 * takes whole warps, registers in fours: gcx_cta_threads, gcx_cta_regs). Zero means the kernel
 * does not fit at all. */
static uint32_t cta_limit(const gcx_gpu_config *c, const gcx_kernel *k, const char **why, uint64_t *need,
                          uint64_t *have)
{
    /* Each limit: what one CTA takes of it and what an SM has (need 0: the kernel takes none). The
     * tightest one, the first of equals, also names the limit when not even one CTA fits. */
    const struct { const char *key; uint64_t need, have; } limits[] = {
        {"core.max_ctas", 1, (uint64_t)c->max_ctas_per_sm},
        {"core.max_threads", gcx_cta_threads(k), (uint64_t)c->max_threads_per_sm},
        {"core.max_warps", k->warps_per_cta, (uint64_t)c->max_warps_per_sm},
        {"core.registers", k->nregs ? gcx_cta_regs(k) : 0, (uint64_t)c->registers_per_sm},
        {"core.shmem_bytes", k->shmem_bytes, (uint64_t)c->shmem_per_sm},
    };
    uint64_t lim = UINT64_MAX;
    *why = limits[0].key; *need = limits[0].need; *have = limits[0].have; /* max_ctas: always a limit */
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        if (!limits[i].need)
            continue;
        uint64_t t = limits[i].have / limits[i].need;
        if (t < lim) {
            lim = t;
            *why = limits[i].key;
            *need = limits[i].need;
            *have = limits[i].have;
        }
    }
    return (uint32_t)lim;
}

static int kernel_start(gcx_gpu *g, uint32_t ki, gcx_error *err)
{
    const gcx_kernel *k = &g->wl->kernels[ki];
    const char *why;
    uint64_t need, have;
    g->kernel = ki;
    g->next_cta = 0;
    g->ctas_left = k->n_ctas;
    g->dispatch_sm = 0;
    g->cta_limit = cta_limit(&g->cfg, k, &why, &need, &have);
    if (g->cta_limit == 0 && k->n_ctas)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "kernel %u (%s) does not fit on an SM: a CTA of %u threads with %u registers each and %u "
                        "bytes of shared memory needs %llu of %s = %llu",
                        ki + 1, k->name ? k->name : "?", k->threads_per_cta, k->nregs, k->shmem_bytes,
                        (unsigned long long)need, why, (unsigned long long)have);
    for (uint32_t i = 0; i < g->wl->n_memcpys; i++) {
        const gcx_memcpy *m = &g->wl->memcpys[i];
        if (m->before_kernel == ki && g->cfg.l2_prefill)
            gcx_l2_prefill(g, m->dst, m->bytes);
    }
    GCX_TECH_EACH(g, t)
    if (t->ops && t->ops->kernel_start)
        t->ops->kernel_start(t, ki, g->now);
    return GCX_OK;
}

/* Round-robin CTA dispatch: at most one new CTA per SM per cycle, SMs visited in turn. */
static int dispatch(gcx_gpu *g)
{
    const gcx_kernel *k = &g->wl->kernels[g->kernel];
    uint32_t n_sms = (uint32_t)g->cfg.sms;
    int progress = 0;
    for (uint32_t tries = 0; tries < n_sms && g->next_cta < k->n_ctas; tries++) {
        gcx_sm *sm = &g->sms[g->dispatch_sm];
        g->dispatch_sm = (g->dispatch_sm + 1) % n_sms;
        if (sm->used_ctas >= g->cta_limit)
            continue;
        uint32_t slot = 0;
        while (slot < sm->n_ctas && sm->ctas[slot].id != GCX_NONE)
            slot++;
        if (slot >= sm->n_ctas || (slot + 1) * k->warps_per_cta > sm->n_warps)
            continue;
        gcx_sm_launch_cta(g, sm, slot, g->next_cta++, g->now);
        progress = 1;
    }
    return progress;
}

/* ---- time series --------------------------------------------------------------------------- */

static void ts_sample(gcx_gpu *g, uint64_t cycle)
{
    if (g->progress)
        *g->progress = g->inst_total; /* read by another thread; a torn read only delays a bar */
    if (g->ts_n == g->ts_cap) {
        size_t cap = g->ts_cap ? g->ts_cap * 2 : 256;
        gcx_ts_row *t = realloc(g->ts, cap * sizeof *t);
        if (!t)
            return; /* the time series is best effort; the run's totals are unaffected */
        g->ts = t;
        g->ts_cap = cap;
    }
    gcx_ts_row *row = &g->ts[g->ts_n++];
    memset(row, 0, sizeof *row);
    row->cycle = cycle;
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        const gcx_sm *sm = &g->sms[i];
        const gcx_tcache_stats *s = &sm->l1.tc.s;
        row->warp_insts += sm->warp_insts;
        row->thread_insts += sm->thread_insts;
        row->l1d_accesses += s->accesses;
        row->l1d_hits += s->hits;
        row->l1d_fails += s->fail_line_alloc + s->fail_mshr_entry + s->fail_mshr_merge + s->fail_miss_queue;
    }
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++) {
        row->l2_accesses += g->l2[p].tc.s.accesses;
        row->l2_hits += g->l2[p].tc.s.hits;
    }
    for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++)
        row->dram_reads += g->dram[ch].reads;
    row->icnt_flits = g->req_net.flits + g->reply_net.flits;
}

/* Samples for every interval boundary in [.., upto]. */
static void ts_advance(gcx_gpu *g, uint64_t upto)
{
    uint64_t step = (uint64_t)g->cfg.timeseries_interval;
    while (g->ts_next <= upto) {
        ts_sample(g, g->ts_next);
        g->ts_next += step;
    }
}

/* ---- the cycle loop ------------------------------------------------------------------------ */

static int work_left(const gcx_gpu *g)
{
    if (g->ctas_left)
        return 1;
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++)
        if (gcx_sm_busy(&g->sms[i]) || g->sms[i].l1.miss_q.n || g->sms[i].l1.hit_q.n)
            return 1;
    return g->reqs_live > 0;
}

static uint64_t next_event(gcx_gpu *g)
{
    uint64_t t = GCX_INF;
#define MIN_EVENT(x)                                                                               \
    do {                                                                                           \
        uint64_t v_ = (x);                                                                         \
        if (v_ < t)                                                                                \
            t = v_;                                                                                \
    } while (0)
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        MIN_EVENT(gcx_sm_next_event(g, &g->sms[i]));
        MIN_EVENT(gcx_l1_next_event(g, &g->sms[i]));
    }
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++)
        MIN_EVENT(gcx_l2_next_event(g, p));
    for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++)
        MIN_EVENT(gcx_dram_next_event(g, ch));
    GCX_TECH_EACH(g, tech)
    if (tech->ops && tech->ops->next_event)
        MIN_EVENT(tech->ops->next_event(tech, g->now));
    /* Time-series samples are taken at interval boundaries; do not jump over one. */
    if (g->ts_next > g->now)
        MIN_EVENT(g->ts_next);
#undef MIN_EVENT
    return t;
}

static int deadlock(gcx_gpu *g, gcx_error *err, const char *why)
{
    uint32_t busy_sms = 0, warps = 0, waiting = 0, barrier = 0, mshr = 0, missq = 0, l2_in = 0, dram_q = 0;
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        gcx_sm *sm = &g->sms[i];
        busy_sms += gcx_sm_busy(sm);
        for (uint32_t w = 0; w < sm->n_warps; w++) {
            warps += sm->warps[w].state != GCX_WARP_EMPTY;
            waiting += sm->warps[w].state == GCX_WARP_ACTIVE && sm->warps[w].ready_at == GCX_INF;
            barrier += sm->warps[w].state == GCX_WARP_BARRIER;
        }
        mshr += sm->l1.mshr.used;
        missq += sm->l1.miss_q.n;
    }
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++)
        l2_in += g->req_net.dst_q[p].n;
    for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++)
        dram_q += g->dram[ch].pend.n + g->dram[ch].q.n + g->dram[ch].busy.n;
    return gcx_fail(err, GCX_ERR_DEADLOCK,
                    "no progress (%s) at cycle %llu in kernel %u: %u CTAs left, %u busy SMs, %u resident warps "
                    "(%u waiting on memory, %u at a barrier), %u L1D MSHRs in use, %u in L1D miss queues, %u "
                    "requests waiting at L2, %u at DRAM, %llu requests in flight",
                    why, (unsigned long long)g->now, g->kernel + 1, g->ctas_left, busy_sms, warps, waiting, barrier,
                    mshr, missq, l2_in, dram_q, (unsigned long long)g->reqs_live);
}

/* SMs and L2 partitions compete for crossbar ports, buffer slots and DRAM queue entries by acting
 * first in a cycle; who goes first rotates every cycle (round robin, as GPGPU-Sim's iSLIP
 * allocators and its sub-partitions' turns at their channel), so that no index always wins. */
static int cycle(gcx_gpu *g)
{
    int progress = 0;
    uint32_t n_sms = (uint32_t)g->cfg.sms, n_parts = (uint32_t)g->cfg.l2_partitions;
    uint32_t first_sm = (uint32_t)(g->now % n_sms), first_part = (uint32_t)(g->now % n_parts);
    for (uint32_t ch = 0; ch < (uint32_t)g->cfg.dram_channels; ch++)
        progress |= gcx_dram_cycle(g, ch);
    for (uint32_t k = 0, p = first_part; k < n_parts; k++, p = p + 1 == n_parts ? 0 : p + 1)
        progress |= gcx_l2_cycle(g, p);
    for (uint32_t k = 0, i = first_sm; k < n_sms; k++, i = i + 1 == n_sms ? 0 : i + 1)
        progress |= gcx_l1_cycle(g, &g->sms[i]);
    for (uint32_t k = 0, i = first_sm; k < n_sms; k++, i = i + 1 == n_sms ? 0 : i + 1)
        progress |= gcx_sm_cycle(g, &g->sms[i]);
    progress |= dispatch(g);
    return progress;
}

static int run_kernel(gcx_gpu *g, gcx_error *err)
{
    uint64_t limit = (uint64_t)g->cfg.max_cycles, patience = (uint64_t)g->cfg.deadlock_cycles;
    g->last_progress = g->now;
    while (work_left(g)) {
        ts_advance(g, g->now);
        GCX_TECH_EACH(g, t)
        if (t->ops && t->ops->cycle_start)
            t->ops->cycle_start(t, g->now);
        int progress = cycle(g);
        if (progress) {
            g->last_progress = g->now;
            g->now++;
        } else {
            if (g->now - g->last_progress > patience) {
                /* A latency configured longer than the patience looks like a hang: say which key to raise. */
                char why[160];
                snprintf(why, sizeof why, "over sim.deadlock_cycles = %llu cycles without progress; raise it if a "
                         "configured latency is that long", (unsigned long long)patience);
                return deadlock(g, err, why);
            }
            uint64_t t = next_event(g);
            if (t == GCX_INF) {
                if (!work_left(g))
                    break;
                return deadlock(g, err, "nothing can happen any more");
            }
            if (t <= g->now)
                t = g->now + 1;
            /* The LD/ST units and L2 partitions that just refused would refuse again on every skipped cycle. */
            uint64_t skipped = t - g->now - 1;
            if (skipped) {
                for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++)
                    gcx_l1_count_skipped_fails(g, &g->sms[i], skipped, t - 1);
                for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++)
                    gcx_l2_count_skipped_fails(g, p, skipped);
            }
            g->now = t;
        }
        if (g->fault)
            return gcx_fail(err, GCX_ERR_INTERNAL, "internal error at cycle %llu: %s", (unsigned long long)g->now,
                            g->fault);
        if (g->oom)
            return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for memory requests at cycle %llu",
                            (unsigned long long)g->now);
        if (limit && g->now > limit)
            return gcx_fail(err, GCX_ERR_DEADLOCK, "sim.max_cycles = %llu reached in kernel %u",
                            (unsigned long long)limit, g->kernel + 1);
        if (g->stop && *g->stop)
            return gcx_fail(err, GCX_ERR_STOPPED, "stopped at cycle %llu of kernel %u", (unsigned long long)g->now,
                            g->kernel + 1);
    }
    return GCX_OK;
}

int gcx_gpu_run(gcx_gpu *g, gcx_error *err)
{
    int rc;
    for (uint32_t ki = 0; ki < g->wl->n_kernels; ki++) {
        if ((rc = kernel_start(g, ki, err)))
            return rc;
        if ((rc = run_kernel(g, err)))
            return rc;
        GCX_TECH_EACH(g, t)
        if (t->ops && t->ops->kernel_end)
            t->ops->kernel_end(t, ki, g->now);
    }
    /* Trailing memcpys (after the last kernel) do not change anything simulated. */
    ts_advance(g, g->now);
    if (g->ts_n == 0 || g->ts[g->ts_n - 1].cycle != g->now)
        ts_sample(g, g->now);
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        gcx_tcache *tc = &g->sms[i].l1.tc;
        if (tc->power->ops && tc->power->ops->cache_finish)
            tc->power->ops->cache_finish(tc->power, tc, g->now);
        gcx_tcache_finish(tc, g->now);
    }
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++) {
        gcx_tcache *tc = &g->l2[p].tc;
        if (tc->power->ops && tc->power->ops->cache_finish)
            tc->power->ops->cache_finish(tc->power, tc, g->now);
        gcx_tcache_finish(tc, g->now);
    }
    GCX_TECH_EACH(g, t)
    if (t->ops && t->ops->finish)
        t->ops->finish(t, g->now);
    return GCX_OK;
}

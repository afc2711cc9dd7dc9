/* The L1 data cache of an SM, in the style of GPGPU-Sim's data cache:
 * - reads: hit (after the hit latency, plus any wake-up and bank wait), merge into the MSHR of a
 *   line already being fetched, or allocate a line and an MSHR entry and queue a fetch;
 * - a request that cannot be accepted is a reservation fail, by the first reason found in GPGPU-Sim's
 *   order: no line can be allocated (all ways reserved), the miss queue is full, no MSHR entry or
 *   the MSHR entry is full;
 * - global stores are write-evict and no-write-allocate; local stores write back on a hit;
 * - atomics, uncached global accesses and every request of a switched-off L1D bypass it.
 * The miss queue drains into the crossbar one request a cycle; replies fill lines and answer the
 * requests waiting in the line's MSHR entry.
 * Sharing among the L1Ds of a cluster (l1d.sharing) is the technique's business: the L1D offers
 * it each cacheable request and each fetch, exports its building blocks (gcx_l1_serve,
 * gcx_l1_holds, gcx_l1_data_read, gcx_l1_fetch_l2), and moves packets on the cluster network:
 * an answer to another SM's load leaves through it, and arrivals go to the technique. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_l1_init(gcx_gpu *g, gcx_sm *sm, gcx_error *err)
{
    const gcx_gpu_config *c = &g->cfg;
    gcx_l1 *l1 = &sm->l1;
    gcx_cache_config cc = {
        .sets = g->l1_sets,
        .ways = (uint32_t)c->l1d_ways,
        .line_bytes = (uint32_t)c->l1d_line_bytes,
        .sector_bytes = (uint32_t)c->l1d_sector_bytes,
        .index_fn = c->l1d_index == GCX_INDEX_CHOICE_XOR     ? GCX_INDEX_XOR
                    : c->l1d_index == GCX_INDEX_CHOICE_FERMI ? GCX_INDEX_FERMI
                                                             : GCX_INDEX_MOD,
        .write_back = 1,
        .write_allocate = 0,
        .policy = gcx_policies[c->l1d_policy],
        .seed = g->seed ^ (0x9E37ull * (sm->id + 1)),
    };
    memcpy(cc.policy_params, c->policy_param[0][c->l1d_policy], sizeof cc.policy_params);
    int rc = gcx_tcache_init(&l1->tc, &cc, 1, sm->id, err);
    if (rc)
        return rc;
    l1->tc.power = &g->tech[GCX_TECH_L1D_POWER];
    if (gcx_mshr_init(&l1->mshr, (uint32_t)c->l1d_mshr_entries, (uint32_t)c->l1d_mshr_merge) != GCX_OK)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for L1D MSHRs");
    l1->miss_q.cap = (uint32_t)c->l1d_miss_queue;
    l1->missq_wait.cap = UINT32_MAX;
    l1->hit_q.cap = UINT32_MAX;
    l1->cluster_out[0].cap = l1->cluster_out[1].cap = UINT32_MAX;
    l1->bank_free = calloc((size_t)c->l1d_banks, sizeof *l1->bank_free);
    l1->pipes = calloc((size_t)c->l1d_banks, sizeof *l1->pipes);
    if (!l1->bank_free || !l1->pipes)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for L1D banks");
    /* GPGPU-Sim 4.0 keeps a shift register of l1_latency slots per bank */
    for (int64_t b = 0; b < c->l1d_banks; b++)
        l1->pipes[b].q.cap = (uint32_t)(c->l1d_hit_latency > 0 ? c->l1d_hit_latency : 1);
    return GCX_OK;
}

void gcx_l1_free(gcx_l1 *l1)
{
    gcx_tcache_free(&l1->tc);
    gcx_mshr_free(&l1->mshr);
    free(l1->bank_free);
    free(l1->pipes);
    memset(l1, 0, sizeof *l1);
}

static inline uint32_t data_bytes(const gcx_req *r) { return (uint32_t)gcx_popcount64(r->words) * 4; }

/* The data bank of an address: lines are interleaved over the banks. */
static inline uint32_t bank_of(const gcx_gpu *g, uint64_t addr)
{
    uint32_t banks = (uint32_t)g->cfg.l1d_banks;
    return banks == 1 ? 0 : (uint32_t)((addr >> g->l1_line_shift) % banks);
}

/* Bank wait of a data-array access: each bank serves one access a cycle. */
static inline uint64_t bank_wait(gcx_gpu *g, gcx_l1 *l1, uint64_t addr, uint64_t now)
{
    uint32_t b = bank_of(g, addr);
    uint64_t start = l1->bank_free[b] > now ? l1->bank_free[b] : now;
    l1->bank_free[b] = start + 1;
    return start - now;
}

static void count_fail(gcx_gpu *g, gcx_sm *sm, int reason, uint64_t n, uint64_t now)
{
    if (!gcx_tcache_count_fail(&sm->l1.tc, reason, n))
        return; /* a port stall (a bypass finding the miss queue full) */
    gcx_tech *adm = &g->tech[GCX_TECH_L1D_ADMISSION];
    if (adm->ops && adm->ops->l1_outcome)
        adm->ops->l1_outcome(adm, sm->id, 1, n, now);
}

/* n skipped retries of request r (the head of a queue) that failed for `reason`. */
static void count_retries(gcx_gpu *g, gcx_sm *sm, const gcx_req *r, int reason, uint64_t n, uint64_t now)
{
    if (!reason || !n)
        return;
    count_fail(g, sm, reason, n, now);
    if (reason != GCX_FAIL_PORT && r && r->type == GCX_REQ_READ && r->space == GCX_SPACE_GLOBAL)
        sm->l1.global_read_lookups += n;
}

void gcx_l1_count_skipped_fails(gcx_gpu *g, gcx_sm *sm, uint64_t n, uint64_t now)
{
    if (sm->ldst_n)
        count_retries(g, sm, sm->ldst[sm->ldst_head].reqs, sm->ldst_fail, n, now);
    count_retries(g, sm, g->cluster_net.dst_q ? g->cluster_net.dst_q[sm->id].head : NULL, sm->l1.in_fail, n, now);
    for (uint32_t b = 0; sm->l1.piped && n && b < (uint32_t)g->cfg.l1d_banks; b++)
        count_retries(g, sm, sm->l1.pipes[b].q.head, sm->l1.pipes[b].fail, n, now);
}

static void count_accept(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    gcx_tech *adm = &g->tech[GCX_TECH_L1D_ADMISSION];
    if (adm->ops && adm->ops->l1_outcome)
        adm->ops->l1_outcome(adm, sm->id, 0, 1, now);
}

/* Write the 32-byte sectors `dirty32` of local line `la` back to the L2. The caller made room in the
 * miss queue. A flush, and a fill that evicts a dirty local line with allocate on fill (the victim is
 * chosen only then), may overfill it briefly. */
static void write_back(gcx_gpu *g, gcx_sm *sm, uint64_t la, uint8_t dirty32, uint64_t now)
{
    gcx_req *wb = gcx_req_new(g);
    wb->addr = la << sm->l1.tc.c.line_shift;
    wb->sectors = dirty32;
    wb->words = gcx_words_of_sectors(dirty32);
    wb->type = GCX_REQ_WRITEBACK;
    wb->space = GCX_SPACE_LOCAL;
    wb->sm = wb->home = sm->id;
    wb->load = GCX_NONE;
    wb->flags = 0;
    wb->lanes = 32;
    wb->tech[0] = wb->tech[1] = -1;
    sm->l1.tc.s.writebacks++;
    gcx_l1_miss_queue_push(&sm->l1, wb, now + 1);
}

/* Drop a valid line's data: statistics, the power technique, and a writeback if it is dirty. The
 * data was lost at `lost` (a decay cycle, which a lazy switch-off finds later; else now): the line's
 * residency ends then, while its writeback leaves now. */
static void drop_line_at(gcx_gpu *g, gcx_sm *sm, uint32_t line, uint64_t lost, uint64_t now, int writeback_ok)
{
    gcx_tcache *tc = &sm->l1.tc;
    gcx_tech *pw = tc->power;
    if (pw->ops && pw->ops->line_evict)
        pw->ops->line_evict(pw, tc, line, lost);
    gcx_tcache_note_drop(tc, line, lost);
    uint64_t la;
    int dirty;
    /* A sectored line writes back only its modified sectors (as GPGPU-Sim's sector cache does). */
    uint8_t dirty32 = gcx_to_32_sectors(tc->c.meta[line].dirty, &tc->c);
    if (gcx_cache_invalidate(&tc->c, line, &la, &dirty) && dirty && writeback_ok)
        write_back(g, sm, la, dirty32, now);
}

static inline void drop_line(gcx_gpu *g, gcx_sm *sm, uint32_t line, uint64_t now, int writeback_ok)
{
    drop_line_at(g, sm, line, now, now, writeback_ok);
}

/* The L1D accesses of the loads waiting in `sm`'s MSHR entry `ei` are complete: its data comes from
 * below the L1Ds. Later merges into the entry are complete when they merge (wait_in_entry). */
static void entry_left_l1(gcx_gpu *g, uint32_t sm, uint32_t ei, uint64_t now)
{
    gcx_mshr_entry *e = &g->sms[sm].l1.mshr.e[ei];
    e->left_l1 = 1;
    for (gcx_req *w = e->waiting; w; w = w->next)
        gcx_sm_l1_done(g, w, now);
}

/* A load request waits in MSHR entry `ei` for its data. */
static inline void wait_in_entry(gcx_gpu *g, gcx_sm *sm, uint32_t ei, gcx_req *r, uint64_t now)
{
    gcx_mshr_add(&sm->l1.mshr, ei, r);
    if (sm->l1.mshr.e[ei].left_l1)
        gcx_sm_l1_done(g, r, now);
}

/* Send a request straight to the crossbar queue (bypass, write-through, fetch): it leaves the L1D
 * for the L2, and so do the loads waiting for a fetch. */
static inline void to_miss_queue(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (r->flags & GCX_RF_L1_ALLOC)
        entry_left_l1(g, r->sm, r->mshr, now);
    else
        gcx_sm_l1_done(g, r, now);
    gcx_l1_miss_queue_push(&sm->l1, r, now + 1);
}

/* A miss's fetch: the sharing technique may serve it from the cluster, else it goes to the L2.
 * The fetch belongs to this L1D's MSHRs whoever asked for the data. */
static inline void send_fetch(gcx_gpu *g, gcx_sm *sm, gcx_req *f, uint64_t now)
{
    gcx_tech *sh = &g->tech[GCX_TECH_L1D_SHARING];
    f->sm = sm->id;
    f->cluster = GCX_CL_NONE;
    if (sh->ops->l1_fetch && sh->ops->l1_fetch(sh, sm->id, f, now))
        return;
    to_miss_queue(g, sm, f, now);
}

/* Does the fetch of `sectors32` that r's miss sends need a miss-queue slot? Not when the sharing
 * technique will serve it in the cluster (ATA's distributor routes it to another L1D), unless a
 * power technique may yet turn the miss into a bypass, which does go to the L2. */
static inline int fetch_needs_slot(gcx_gpu *g, gcx_sm *sm, const gcx_req *r, uint8_t sectors32)
{
    gcx_tech *sh = &g->tech[GCX_TECH_L1D_SHARING];
    gcx_tech *pw = sm->l1.tc.power;
    if ((pw->ops && pw->ops->allocate) || !sh->ops->l1_fetch_in_cluster)
        return 1;
    return !sh->ops->l1_fetch_in_cluster(sh, sm->id, r, sectors32);
}

/* GPGPU-Sim's read miss (rd_miss_base, which merges into a fetch in flight go through too) is refused
 * unless the miss queue has room for two requests: the miss and the writeback it might cause. Each
 * refusal is a reservation fail, which AdmL1D's R-to-A counts. */
static inline int miss_queue_short_for_read(const gcx_l1 *l1)
{
    return !gcx_l1_miss_queue_has_room(l1, 2);
}

/* A fetch of `sectors32` for request r's line, answering MSHR entry `mshr` and filling `line` (GCX_NONE:
 * the line is chosen when the data arrives). It carries r's identity (PC, technique payload). */
static void fetch_for(gcx_gpu *g, gcx_sm *sm, const gcx_req *r, uint8_t sectors32, uint32_t line, uint32_t mshr,
                      uint64_t now)
{
    gcx_req *f = gcx_req_new(g);
    *f = *r;
    f->sectors = sectors32;
    f->load = GCX_NONE;
    f->flags = GCX_RF_L1_ALLOC | (r->flags & GCX_RF_PREDICTOR);
    f->line = line;
    f->mshr = mshr;
    send_fetch(g, sm, f, now);
}

void gcx_l1_fetch_l2(gcx_gpu *g, uint32_t sm, gcx_req *f, uint64_t now)
{
    gcx_l1 *l1 = &g->sms[sm].l1;
    f->cluster = GCX_CL_NONE;
    /* The technique held the fetch (a probe round trip, a remote read that fell through) while the
     * queue may have filled: its capacity holds, so the fetch waits for a free slot, after any fetch
     * already waiting (gcx_l1_cycle moves them in, one a cycle), as the miss waits in its MSHR. */
    if (l1->missq_wait.n == 0 && l1->miss_q.n < l1->miss_q.cap)
        to_miss_queue(g, &g->sms[sm], f, now);
    else
        gcx_q_push(&l1->missq_wait, f, now);
}

void gcx_cluster_send(gcx_gpu *g, uint32_t from, gcx_req *r, uint64_t when)
{
    gcx_q_insert_sorted(&g->sms[from].l1.cluster_out[r->cluster >= GCX_CL_ANSWER], r, when);
}

/* Answer a load request this L1D served: to its own SM, or over the cluster network to the SM
 * that sent it here. */
static inline void answer(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (r->cluster == GCX_CL_READ) { /* another L1D's fetch that waited for this fill */
        r->cluster = GCX_CL_DATA;
        gcx_cluster_send(g, sm->id, r, now);
        return;
    }
    if (r->sm == sm->id) {
        gcx_sm_answer(g, sm, r, now);
        return;
    }
    r->cluster = GCX_CL_ANSWER;
    gcx_cluster_send(g, sm->id, r, now);
}

/* A store finished in the L1D itself (a local write-back hit): no acknowledgement travels, so the
 * warp's wait for it ends at once. */
static inline void store_done_here(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (r->load == GCX_NONE)
        gcx_req_free(g, r);
    else
        answer(g, sm, r, now);
}

static int bypass_access(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (!gcx_l1_miss_queue_has_room(&sm->l1, 1))
        return GCX_FAIL_PORT;
    to_miss_queue(g, sm, r, now);
    return GCX_FAIL_NONE;
}

static int read_hit(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint32_t line, uint64_t now)
{
    gcx_tcache_count_access(&sm->l1.tc, 0, 1);
    gcx_q_insert_sorted(&sm->l1.hit_q, r, gcx_l1_data_read(g, sm->id, line, r, now));
    return GCX_FAIL_NONE;
}

/* A read miss on a block an MSHR entry `ei` is already fetching (into `line`, or GCX_NONE with
 * allocate-on-fill): wait in the entry, fetching the sectors that neither the entry has requested
 * nor the line holds (`have`). */
static int merge_miss(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint32_t ei, uint32_t line, uint8_t have, uint8_t need,
                      uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    gcx_tcache *tc = &l1->tc;
    gcx_cache *c = &tc->c;
    gcx_mshr_entry *e = &l1->mshr.e[ei];
    uint8_t missing = (uint8_t)(need & ~gcx_to_cache_sectors(e->requested, c) & ~have);
    /* The miss queue first, then the entry's room: GPGPU-Sim's rd_miss_base checks the queue before
     * send_read_request probes the MSHR, and the fail reasons are counted in that order. */
    if (miss_queue_short_for_read(l1) && (!missing || fetch_needs_slot(g, sm, r, gcx_to_32_sectors(missing, c))))
        return GCX_FAIL_MISS_QUEUE;
    if (e->n_waiting >= l1->mshr.merge_cap)
        return GCX_FAIL_MSHR_MERGE;
    if (missing) {
        e->requested |= gcx_to_32_sectors(missing, c);
        fetch_for(g, sm, r, gcx_to_32_sectors(missing, c), line, ei, now);
    }
    if (line != GCX_NONE)
        c->cfg.policy->on_hit(c, line); /* GPGPU-Sim's HIT_RESERVED: a use of the line being fetched */
    wait_in_entry(g, sm, ei, r, now);
    gcx_tcache_count_access(tc, 0, 0);
    tc->s.pending_hits++;
    return GCX_FAIL_NONE;
}

/* Allocate on fill: a miss takes only an MSHR entry (found by address) and a miss-queue slot; the
 * line is chosen when the data arrives, so outstanding misses never take lines out of service. */
static int read_access_on_fill(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    gcx_tcache *tc = &l1->tc;
    gcx_cache *c = &tc->c;
    gcx_tech *pw = tc->power;
    uint64_t la = r->addr >> c->line_shift;
    uint32_t set = gcx_cache_set_of(c, la);
    gcx_tcache_before_lookup(tc, set, now);
    int way = gcx_cache_find(c, set, la);
    uint8_t need = gcx_to_cache_sectors(r->sectors, c);
    uint32_t line = way >= 0 ? set * c->cfg.ways + (uint32_t)way : GCX_NONE;
    if (r->space == GCX_SPACE_GLOBAL)
        l1->global_read_lookups++;
    if (way >= 0 && c->meta[line].valid && (c->meta[line].valid & need) == need)
        return read_hit(g, sm, r, line, now);
    uint8_t present = way >= 0 ? c->meta[line].valid : 0;
    uint32_t ei = gcx_mshr_find(&l1->mshr, la);
    if (ei != GCX_NONE)
        return merge_miss(g, sm, r, ei, GCX_NONE, present, need, now);
    uint8_t fetch = c->sectors_per_line == 1 ? 1 : (uint8_t)(need & ~present);
    /* The miss queue before the MSHR, as in GPGPU-Sim (see merge_miss). */
    if (miss_queue_short_for_read(l1) && fetch_needs_slot(g, sm, r, gcx_to_32_sectors(fetch, c)))
        return GCX_FAIL_MISS_QUEUE;
    if (l1->mshr.n_free == 0)
        return GCX_FAIL_MSHR_ENTRY;
    gcx_tcache_count_access(tc, 0, 0);
    if (pw->ops && pw->ops->allocate && !pw->ops->allocate(pw, tc, r, now)) {
        tc->s.bypasses++;
        to_miss_queue(g, sm, r, now);
        return GCX_FAIL_NONE;
    }
    if (way >= 0 && present == 0 && pw->ops && pw->ops->line_off_hit) {
        tc->s.off_hits++;
        pw->ops->line_off_hit(pw, tc, line, r, now);
    }
    ei = gcx_mshr_alloc(&l1->mshr, la, GCX_NONE);
    l1->mshr.e[ei].requested = gcx_to_32_sectors(fetch, c);
    wait_in_entry(g, sm, ei, r, now);
    fetch_for(g, sm, r, gcx_to_32_sectors(fetch, c), GCX_NONE, ei, now);
    return GCX_FAIL_NONE;
}

static int read_access(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (g->cfg.l1d_allocate == GCX_ALLOC_ON_FILL)
        return read_access_on_fill(g, sm, r, now);
    gcx_l1 *l1 = &sm->l1;
    gcx_tcache *tc = &l1->tc;
    gcx_cache *c = &tc->c;
    gcx_tech *pw = tc->power;
    uint64_t la = r->addr >> c->line_shift;
    uint32_t set = gcx_cache_set_of(c, la);
    gcx_tcache_before_lookup(tc, set, now);
    int way = gcx_cache_find(c, set, la);
    uint8_t need = gcx_to_cache_sectors(r->sectors, c);
    uint32_t line = way >= 0 ? set * c->cfg.ways + (uint32_t)way : GCX_NONE;
    if (r->space == GCX_SPACE_GLOBAL)
        l1->global_read_lookups++;

    /* Sectors already here are a hit even while the line is being fetched for others. */
    if (way >= 0 && c->meta[line].valid && (c->meta[line].valid & need) == need)
        return read_hit(g, sm, r, line, now);
    if (way >= 0 && c->meta[line].reserved) /* the line is being fetched */
        return merge_miss(g, sm, r, tc->mshr_of[line], line, c->meta[line].valid, need, now);

    /* Miss: a line (a new one, or this one for missing sectors or powered-off data), room in the
     * miss queue and an MSHR entry, refused in that order as GPGPU-Sim does (the tag probe, then
     * rd_miss_base's miss_queue_full, then send_read_request's MSHR check). */
    int new_line = way < 0;
    /* The victim is chosen before the checks below can refuse the request; a refused attempt gives
     * back the random numbers it drew, so that a request retried every cycle draws as one whose
     * retries the cycle loop skips (and results do not depend on where the loop stops), and the
     * replacement state its victim search changed (SRRIP ages the set until a line is distant): a
     * request the L1D did not take leaves the set's replacement order as it found it. */
    gcx_rng rng_before = c->rng;
    uint32_t repl_before[GCX_MAX_WAYS];
    uint32_t *set_repl = c->repl + (size_t)set * c->cfg.ways;
    if (new_line) {
        memcpy(repl_before, set_repl, c->cfg.ways * sizeof *set_repl);
        int v = gcx_cache_pick_victim(c, set);
        if (v < 0)
            return GCX_FAIL_LINE_ALLOC;
        line = set * c->cfg.ways + (uint32_t)v;
    }
    int victim_dirty = new_line && c->tag[line] != GCX_TAG_NONE && c->meta[line].dirty;
    uint8_t fetch = new_line || c->meta[line].valid == 0 ? (c->sectors_per_line == 1 ? 1 : need)
                                                         : (uint8_t)(need & ~c->meta[line].valid);
    /* Room for the victim's writeback and the fetch, unless neither needs the queue (a clean victim
     * and a fetch that stays in the cluster). */
    if (miss_queue_short_for_read(l1) && (victim_dirty || fetch_needs_slot(g, sm, r, gcx_to_32_sectors(fetch, c)))) {
        c->rng = rng_before;
        if (new_line)
            memcpy(set_repl, repl_before, c->cfg.ways * sizeof *set_repl);
        return GCX_FAIL_MISS_QUEUE;
    }
    if (l1->mshr.n_free == 0) {
        c->rng = rng_before;
        if (new_line)
            memcpy(set_repl, repl_before, c->cfg.ways * sizeof *set_repl);
        return GCX_FAIL_MSHR_ENTRY;
    }
    if (pw->ops && pw->ops->allocate && !pw->ops->allocate(pw, tc, r, now)) {
        gcx_tcache_count_access(tc, 0, 0);
        tc->s.bypasses++;
        to_miss_queue(g, sm, r, now);
        return GCX_FAIL_NONE;
    }
    if (!new_line && c->meta[line].valid == 0 && pw->ops && pw->ops->line_off_hit) {
        tc->s.off_hits++;
        pw->ops->line_off_hit(pw, tc, line, r, now);
    }
    if (new_line) {
        if (c->tag[line] != GCX_TAG_NONE) {
            if (c->meta[line].valid)
                tc->s.evictions++;
            drop_line(g, sm, line, now, 1);
        }
        gcx_cache_install(c, line, la, 0, now);
    } else {
        c->cfg.policy->on_hit(c, line); /* new sectors or refetched data in a kept line: a use */
    }
    c->meta[line].reserved = 1;
    uint32_t e = gcx_mshr_alloc(&l1->mshr, la, line);
    tc->mshr_of[line] = e;
    l1->mshr.e[e].requested = gcx_to_32_sectors(fetch, c);
    wait_in_entry(g, sm, e, r, now);
    fetch_for(g, sm, r, gcx_to_32_sectors(fetch, c), line, e, now);
    gcx_tcache_count_access(tc, 0, 0);
    return GCX_FAIL_NONE;
}

/* Whether every line of `set` is being fetched (no line could be given to another block now). */
static int set_fully_reserved(const gcx_cache *c, uint32_t set)
{
    for (uint32_t w = 0; w < c->cfg.ways; w++)
        if (!c->meta[set * c->cfg.ways + w].reserved)
            return 0;
    return 1;
}

static int write_access(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    gcx_tcache *tc = &l1->tc;
    gcx_cache *c = &tc->c;
    uint64_t la = r->addr >> c->line_shift;
    uint32_t set = gcx_cache_set_of(c, la);
    gcx_tcache_before_lookup(tc, set, now);
    int way = gcx_cache_find(c, set, la);
    uint32_t line = way >= 0 ? set * c->cfg.ways + (uint32_t)way : GCX_NONE;
    uint8_t need = gcx_to_cache_sectors(r->sectors, c);
    uint8_t have = way >= 0 ? (uint8_t)(c->meta[line].valid & need) : 0; /* written sectors held here */
    int hit = have && have == need;
    if (way < 0 && g->cfg.l1d_store_blocked_by_reserved_set && set_fully_reserved(c, set))
        return GCX_FAIL_LINE_ALLOC;

    if (hit && r->space == GCX_SPACE_LOCAL) {
        /* Local memory is write-back: a hit stays in the L1D. */
        gcx_tech *pw = tc->power;
        if (pw->ops && pw->ops->line_access)
            pw->ops->line_access(pw, tc, line, r, now);
        gcx_tcache_note_access(tc, line, r, now, 1);
        c->meta[line].dirty |= need;
        gcx_tcache_count_access(tc, 1, 1);
        if (pw->ops && pw->ops->line_after_access)
            pw->ops->line_after_access(pw, tc, line, r, now);
        store_done_here(g, sm, r, now);
        return GCX_FAIL_NONE;
    }
    /* The store goes to the L2. A local line missing some of the written sectors writes its dirty
     * data back first (it must reach the L2 before the copy leaves), which needs a second slot. */
    int local = have && r->space == GCX_SPACE_LOCAL;
    int local_wb = local && c->meta[line].dirty;
    if (!gcx_l1_miss_queue_has_room(l1, 1u + (uint32_t)local_wb))
        return GCX_FAIL_MISS_QUEUE;
    gcx_tcache_count_access(tc, 1, hit);
    if (have) {
        /* Write-evict: the copies of the written sectors leave the L1D. An unsectored line, or a
         * sectored one left with no data, is dropped; a line being fetched keeps its reservation
         * (GPGPU-Sim's sector cache invalidates the written sectors only). A local line is
         * dropped whole with its writeback, or, while it is being fetched, writes back the dirty
         * sectors it loses. */
        tc->s.invalidations++;
        if (local && !c->meta[line].reserved) {
            drop_line(g, sm, line, now, 1);
        } else if (c->meta[line].reserved || c->meta[line].valid != have) {
            uint8_t lost_dirty = (uint8_t)(c->meta[line].dirty & have);
            if (local && lost_dirty)
                write_back(g, sm, c->tag[line], gcx_to_32_sectors(lost_dirty, c), now);
            if (c->meta[line].valid == have)
                gcx_tcache_note_drop(tc, line, now); /* no data left until the fill: the stay ends */
            c->meta[line].valid &= (uint8_t)~have;
            c->meta[line].dirty &= (uint8_t)~have;
        } else {
            drop_line(g, sm, line, now, 0);
        }
    }
    to_miss_queue(g, sm, r, now);
    return GCX_FAIL_NONE;
}

static inline int bypasses(gcx_gpu *g, gcx_sm *sm, const gcx_req *r, uint64_t now)
{
    int cacheable = r->space == GCX_SPACE_LOCAL ||
                    (r->space == GCX_SPACE_GLOBAL && g->cfg.l1d_cache_global && !(r->flags & GCX_RF_BYPASS_L1));
    if (sm->l1.off || r->type == GCX_REQ_ATOMIC || !cacheable)
        return 1;
    gcx_tech *adm = &g->tech[GCX_TECH_L1D_ADMISSION];
    return adm->ops && adm->ops->l1_bypass && adm->ops->l1_bypass(adm, sm->id, r, now);
}

int gcx_l1_access_private(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (g->cfg.l1d_latency_queue && !(r->flags & GCX_RF_PIPED)) {
        /* The tags are checked when the request leaves its bank's pipeline (l1_pipe_cycle). A full
         * pipeline is a bank conflict, not a reservation fail: no tag was looked up. */
        gcx_queue *q = &sm->l1.pipes[bank_of(g, r->addr)].q;
        if (gcx_q_full(q))
            return GCX_FAIL_PORT;
        r->flags |= GCX_RF_PIPED;
        gcx_q_push(q, r, now + (uint64_t)g->cfg.l1d_hit_latency);
        sm->l1.piped++;
        return GCX_FAIL_NONE;
    }
    int rc = r->type == GCX_REQ_READ ? read_access(g, sm, r, now) : write_access(g, sm, r, now);
    if (rc)
        count_fail(g, sm, rc, 1, now);
    else
        count_accept(g, sm, now);
    return rc;
}

int gcx_l1_serve(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (bypasses(g, sm, r, now))
        return bypass_access(g, sm, r, now);
    return gcx_l1_access_private(g, sm, r, now);
}

int gcx_l1_access(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    if (bypasses(g, sm, r, now))
        return bypass_access(g, sm, r, now);
    gcx_tech *sh = &g->tech[GCX_TECH_L1D_SHARING];
    if (sh->ops->l1_request) {
        int rc = sh->ops->l1_request(sh, sm->id, r, now);
        if (rc != GCX_L1_PRIVATE)
            return rc;
    }
    return gcx_l1_access_private(g, sm, r, now);
}

/* A tag comparison that changes nothing: the line whose tag is addr's, or GCX_NONE. */
static inline uint32_t tag_line(const gcx_cache *c, uint64_t addr)
{
    uint64_t la = addr >> c->line_shift;
    uint32_t set = gcx_cache_set_of(c, la);
    int way = gcx_cache_find(c, set, la);
    return way < 0 ? GCX_NONE : set * c->cfg.ways + (uint32_t)way;
}

uint32_t gcx_l1_holds(gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors)
{
    gcx_tcache *tc = &g->sms[sm].l1.tc;
    const gcx_cache *c = &tc->c;
    /* Another SM's comparison sees the set as a lookup of this L1D's own would: line-state changes
     * the power technique makes lazily (a decayed line switched off and its data lost) are due by
     * now, or a line past its decay cycle would be found, read remotely and revived. */
    gcx_tcache_before_lookup(tc, gcx_cache_set_of(c, addr >> c->line_shift), g->now);
    uint32_t line = tag_line(c, addr);
    /* A switched-off L1D's data is gated, even sectors of a line it was still fetching. */
    if (line == GCX_NONE || g->sms[sm].l1.off)
        return GCX_NONE;
    uint8_t valid = c->meta[line].valid, need = gcx_to_cache_sectors(sectors, c);
    return valid && (valid & need) == need ? line : GCX_NONE;
}

int gcx_l1_has_copy(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint64_t now)
{
    const gcx_tcache *tc = &g->sms[sm].l1.tc;
    gcx_tech *pw = tc->power;
    uint32_t line = tag_line(&tc->c, addr);
    if (line == GCX_NONE || g->sms[sm].l1.off || !tc->c.meta[line].valid)
        return 0;
    /* Not gcx_l1_holds: its lookup would apply due decays in another SM's set, so a measurement
     * would drop data (and write it back, and count an invalidation) at a time of its choosing. */
    return !(pw->ops && pw->ops->line_live) || pw->ops->line_live(pw, tc, line, now);
}

/* The MSHR entry fetching `sectors` of addr's line into this L1D (its tag reserved), or GCX_NONE. */
static uint32_t fetch_entry(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors)
{
    const gcx_l1 *l1 = &g->sms[sm].l1;
    const gcx_cache *c = &l1->tc.c;
    uint32_t line = tag_line(c, addr);
    if (line == GCX_NONE || !c->meta[line].reserved)
        return GCX_NONE;
    uint32_t ei = l1->tc.mshr_of[line];
    return (l1->mshr.e[ei].requested & sectors) == sectors ? ei : GCX_NONE;
}

int gcx_l1_being_fetched(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors)
{
    return fetch_entry(g, sm, addr, sectors) != GCX_NONE;
}

uint32_t gcx_l1_fetching(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors)
{
    const gcx_l1 *l1 = &g->sms[sm].l1;
    uint32_t ei = fetch_entry(g, sm, addr, sectors);
    if (ei == GCX_NONE || l1->mshr.e[ei].remote_wait || l1->mshr.e[ei].n_waiting >= l1->mshr.merge_cap)
        return GCX_NONE;
    return ei;
}

void gcx_l1_wait_fill(gcx_gpu *g, uint32_t sm, uint32_t entry, gcx_req *f, uint64_t now)
{
    /* The requester's entry now waits on this L1D, so it may no longer be waited on: waits never
     * form a cycle. A read sent to an L1D that held the data can end up here when the line was
     * being fetched again by the time it arrived; its entry is marked now, not when it was sent. */
    g->sms[f->sm].l1.mshr.e[f->mshr].remote_wait = 1;
    f->flags |= GCX_RF_REMOTE_WAIT;
    gcx_mshr_add(&g->sms[sm].l1.mshr, entry, f);
    entry_left_l1(g, f->sm, f->mshr, now);
}

uint64_t gcx_l1_data_read(gcx_gpu *g, uint32_t sm, uint32_t line, const gcx_req *r, uint64_t now)
{
    /* A request that spent the hit latency in the latency pipeline has its data when its tags match;
     * another L1D's read (ATA) pays it here. */
    uint64_t latency = (r->flags & GCX_RF_PIPED) ? 0 : (uint64_t)g->cfg.l1d_hit_latency;
    gcx_l1 *l1 = &g->sms[sm].l1;
    gcx_tcache *tc = &l1->tc;
    gcx_tech *pw = tc->power;
    uint64_t extra = 0;
    if (pw->ops && pw->ops->line_access)
        extra = pw->ops->line_access(pw, tc, line, r, now);
    extra += bank_wait(g, l1, r->addr, now);
    gcx_tcache_note_access(tc, line, r, now, 0);
    if (pw->ops && pw->ops->line_after_access)
        pw->ops->line_after_access(pw, tc, line, r, now);
    return now + latency + extra;
}

/* A reply from the L2 arrived at this SM. */
void gcx_l1_reply(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    if (r->space == GCX_SPACE_INST) {
        gcx_sm_ifill(g, sm, r, now);
        return;
    }
    if (!(r->flags & GCX_RF_L1_ALLOC)) {
        /* Data for a bypassing load or an atomic, or a store's acknowledgement. */
        if (r->type == GCX_REQ_READ || r->type == GCX_REQ_ATOMIC || r->load != GCX_NONE)
            answer(g, sm, r, now);
        else
            gcx_req_free(g, r);
        return;
    }
    gcx_tcache *tc = &l1->tc;
    gcx_cache *c = &tc->c;
    uint32_t ei = r->mshr;
    if (ei >= l1->mshr.cap || !l1->mshr.e[ei].used || l1->mshr.e[ei].addr != r->addr >> c->line_shift) {
        g->fault = "an L1D fill arrived for an MSHR entry that is not waiting for it";
        gcx_req_free(g, r);
        return;
    }
    gcx_mshr_entry *e = &l1->mshr.e[ei];
    uint32_t line = e->line;
    uint8_t got = gcx_to_cache_sectors(r->sectors, c);
    e->received |= r->sectors;
    if (g->cfg.l1d_allocate == GCX_ALLOC_ON_FILL) {
        /* Allocate on fill: each fill finds its line, or chooses one, when it arrives. No line is
         * reserved for an entry in this mode, so the line an earlier fill of the same entry chose (an
         * entry can wait for several fetches of a sectored line) may have been evicted or invalidated
         * since. A switched-off L1D was emptied and installs nothing: the data only answers. */
        line = GCX_NONE;
        if (!l1->off) {
            uint64_t la = e->addr;
            uint32_t set = gcx_cache_set_of(c, la);
            gcx_tcache_before_lookup(tc, set, now);
            int way = gcx_cache_find(c, set, la);
            if (way < 0) {
                way = gcx_cache_pick_victim(c, set); /* no line is ever reserved in this mode */
                line = set * c->cfg.ways + (uint32_t)way;
                if (c->tag[line] != GCX_TAG_NONE) {
                    if (c->meta[line].valid)
                        tc->s.evictions++;
                    drop_line(g, sm, line, now, 1);
                }
                gcx_cache_install(c, line, la, 0, now);
            } else {
                line = set * c->cfg.ways + (uint32_t)way;
                c->cfg.policy->on_hit(c, line); /* new sectors in a present line: a use */
            }
        }
        e->line = line;
    } else if (line != GCX_NONE && !l1->off && (c->tag[line] != e->addr || tc->mshr_of[line] != ei)) {
        /* Allocate on miss: the line stays reserved for its entry until the entry's last fill. */
        g->fault = "an L1D fill found the line reserved for its MSHR entry holding another block";
        gcx_req_free(g, r);
        return;
    }
    if (!l1->off) {
        gcx_tcache_note_fill(tc, line, now, got);
        c->meta[line].valid |= got;
        bank_wait(g, l1, c->tag[line] << c->line_shift, now);
        gcx_tech *pw = tc->power;
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
        if (pw->ops && pw->ops->line_fill)
            pw->ops->line_fill(pw, tc, line, r, now);
        gcx_tech *sh = &g->tech[GCX_TECH_L1D_SHARING];
        if (sh->ops->l1_fill)
            sh->ops->l1_fill(sh, sm->id, line, r, now);
    }
    gcx_req_free(g, r);
    /* Every sector asked for must have arrived before the waiting requests are answered. */
    if (e->requested & ~e->received)
        return;
    if (line != GCX_NONE && tc->mshr_of[line] == ei) {
        c->meta[line].reserved = 0;
        tc->mshr_of[line] = GCX_NONE;
    }
    gcx_req *w = e->waiting;
    gcx_mshr_release(&l1->mshr, ei);
    while (w) {
        gcx_req *next = w->next;
        if (!l1->off && line != GCX_NONE)
            gcx_tcache_note_access_in_order(tc, line, w, now, 0);
        answer(g, sm, w, now);
        w = next;
    }
    if (l1->off && line != GCX_NONE && c->tag[line] != GCX_TAG_NONE && !c->meta[line].reserved) {
        /* Switched off while the fetch was in flight: the data is not kept, nor are the sectors the
         * line held before (a flush skips lines being fetched); dirty ones are written back. */
        if (c->meta[line].valid) {
            tc->s.invalidations++;
            drop_line(g, sm, line, now, 1);
        } else {
            gcx_cache_invalidate(c, line, NULL, NULL);
        }
    }
}

void gcx_l1_flush(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    gcx_tcache *tc = &sm->l1.tc;
    for (uint32_t line = 0; line < tc->c.n_lines; line++) {
        if (tc->c.tag[line] == GCX_TAG_NONE || tc->c.meta[line].reserved)
            continue;
        if (tc->c.meta[line].valid)
            tc->s.invalidations++;
        drop_line(g, sm, line, now, 1);
    }
}

void gcx_l1_power_off(gcx_gpu *g, gcx_sm *sm, uint32_t line, uint64_t lost, uint64_t now)
{
    gcx_tcache *tc = &sm->l1.tc;
    if (tc->c.tag[line] == GCX_TAG_NONE || tc->c.meta[line].reserved)
        return;
    if (tc->c.meta[line].valid)
        tc->s.invalidations++;
    drop_line_at(g, sm, line, lost, now, 1);
    gcx_tcache_set_state(tc, line, GCX_LINE_OFF, lost);
}

/* Bytes of a cluster packet: a header, plus the data it carries. */
static inline uint32_t cluster_bytes(const gcx_req *r)
{
    switch (r->cluster) {
    case GCX_CL_REQUEST:
        return 8 + (r->type == GCX_REQ_READ ? 0 : data_bytes(r));
    case GCX_CL_ANSWER:
        return gcx_answer_bytes(r);
    case GCX_CL_DATA:
        return 8 + (uint32_t)gcx_popcount64(r->sectors) * 32;
    default:
        return 8;
    }
}

/* The cluster network at this L1D (only with a sharing technique that receives on it): packets
 * leave when due; replies are taken as they arrive;
 * requests from other SMs are taken one a cycle (the L1D's port for them), and one the technique
 * cannot take yet is offered again next cycle. */
static int cluster_cycle(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    gcx_xbar *x = &g->cluster_net;
    gcx_tech *sh = &g->tech[GCX_TECH_L1D_SHARING];
    uint32_t n = (uint32_t)g->cfg.sms;
    int progress = 0;
    gcx_queue *rq = &x->dst_q[n + sm->id];
    while (gcx_q_ready(rq, now)) {
        gcx_req *r = gcx_q_pop(rq);
        if (r->cluster == GCX_CL_ANSWER)
            gcx_sm_answer(g, sm, r, now);
        else if (sh->ops->cluster_receive(sh, sm->id, r, now))
            g->fault = "a sharing technique refused a reply on the cluster network";
        progress = 1;
    }
    gcx_queue *in = &x->dst_q[sm->id];
    if (gcx_q_ready(in, now)) {
        gcx_req *r = gcx_q_pop(in);
        int rc = sh->ops->cluster_receive(sh, sm->id, r, now);
        /* A refused request was counted as a reservation fail where it was refused; in_fail
         * counts the retries of cycles the model skips. */
        l1->in_fail = rc;
        if (rc)
            gcx_q_push_front(in, r);
        else
            progress = 1;
    }
    for (int reply = 0; reply < 2; reply++) {
        gcx_queue *out = &l1->cluster_out[reply];
        if (!gcx_q_ready(out, now))
            continue;
        uint32_t src = reply ? n + sm->id : sm->id;
        uint32_t dst = reply ? n + out->head->sm : out->head->home;
        if (gcx_xbar_can_send(x, src, dst, now)) {
            gcx_req *r = gcx_q_pop(out);
            gcx_xbar_send(x, src, dst, r, cluster_bytes(r), now);
            progress = 1;
        }
    }
    return progress;
}

/* l1d.latency_queue: the request at the head of each bank's pipeline, when its time is up, looks up
 * its tags; a reservation fail holds that bank's pipeline (only that bank's) and is retried every
 * cycle. A request whose L1D was switched off while it was in the pipeline bypasses it. */
static int l1_pipe_cycle(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    gcx_l1 *l1 = &sm->l1;
    int progress = 0;
    for (uint32_t b = 0; b < (uint32_t)g->cfg.l1d_banks; b++) {
        struct gcx_l1_pipe *p = &l1->pipes[b];
        if (!gcx_q_ready(&p->q, now))
            continue;
        gcx_req *r = gcx_q_pop(&p->q);
        int rc = gcx_l1_serve(g, sm, r, now);
        p->fail = rc;
        if (rc) {
            gcx_q_push_front(&p->q, r);
        } else {
            l1->piped--;
            progress = 1;
        }
    }
    return progress;
}

int gcx_l1_cycle(gcx_gpu *g, gcx_sm *sm)
{
    uint64_t now = g->now;
    gcx_l1 *l1 = &sm->l1;
    int progress = 0;
    gcx_queue *in = &g->reply_net.dst_q[sm->id];
    if (gcx_q_ready(in, now)) {
        gcx_l1_reply(g, sm, gcx_q_pop(in), now);
        progress = 1;
    }
    /* before the hits are answered: a hit that leaves the pipeline now is answered now */
    if (l1->piped)
        progress |= l1_pipe_cycle(g, sm, now);
    while (gcx_q_ready(&l1->hit_q, now)) {
        answer(g, sm, gcx_q_pop(&l1->hit_q), now);
        progress = 1;
    }
    /* Only a technique that receives on the cluster network ever puts a packet on it. */
    if (g->tech[GCX_TECH_L1D_SHARING].ops->cluster_receive)
        progress |= cluster_cycle(g, sm, now);
    if (gcx_q_ready(&l1->miss_q, now)) {
        gcx_req *r = l1->miss_q.head;
        uint32_t p = gcx_l2_partition_of(g, r->addr);
        if (gcx_xbar_can_send(&g->req_net, sm->id, p, now)) {
            gcx_q_pop(&l1->miss_q);
            uint32_t bytes = 8; /* header: address and command */
            if (r->type == GCX_REQ_WRITE || r->type == GCX_REQ_ATOMIC || r->type == GCX_REQ_WRITEBACK)
                bytes += data_bytes(r);
            r->home = p;
            gcx_xbar_send(&g->req_net, sm->id, p, r, bytes, now);
            progress = 1;
        }
    }
    /* A fetch waiting for a slot takes the first one free, before the LD/ST unit (later in the
     * cycle) can: one a cycle, in order. */
    if (l1->missq_wait.n && l1->miss_q.n < l1->miss_q.cap) {
        to_miss_queue(g, sm, gcx_q_pop(&l1->missq_wait), now);
        progress = 1;
    }
    return progress;
}

uint64_t gcx_l1_next_event(gcx_gpu *g, gcx_sm *sm)
{
    uint64_t t = GCX_INF;
    gcx_l1 *l1 = &sm->l1;
    const gcx_queue *in = &g->reply_net.dst_q[sm->id];
    if (in->head)
        t = in->head->t_ready;
    if (l1->hit_q.head && l1->hit_q.head->t_ready < t)
        t = l1->hit_q.head->t_ready;
    /* A pipeline head that failed retries every cycle; the L1D's own events wake it. */
    for (uint32_t b = 0; l1->piped && b < (uint32_t)g->cfg.l1d_banks; b++) {
        const gcx_req *h = l1->pipes[b].q.head;
        if (h && h->t_ready > g->now && h->t_ready < t)
            t = h->t_ready;
    }
    /* The miss queue's head leaves when due and the request port is free; a full buffer at the
     * L2 waits for the L2 to take a request (an event of its own). */
    if (l1->miss_q.head && !gcx_q_full(&g->req_net.dst_q[gcx_l2_partition_of(g, l1->miss_q.head->addr)])) {
        uint64_t d = gcx_xbar_departure(&g->req_net, sm->id, l1->miss_q.head->t_ready);
        if (d < t)
            t = d;
    }
    /* Fetches waiting for a slot: the next one goes in next cycle if there is one free (else when the
     * queue's head leaves, above). */
    if (l1->missq_wait.n && l1->miss_q.n < l1->miss_q.cap && g->now + 1 < t)
        t = g->now + 1;
    if (!g->tech[GCX_TECH_L1D_SHARING].ops->cluster_receive)
        return t;
    /* Cluster network: replies are taken when due, departures leave when due and their port is
     * free; a request the technique refused waits for an event of this L1D (a fill, the miss queue
     * draining). */
    const gcx_queue *cl = g->cluster_net.dst_q;
    for (int reply = 0; reply < 2; reply++) {
        const gcx_req *h = l1->cluster_out[reply].head;
        uint64_t d = h ? gcx_xbar_departure(&g->cluster_net, reply ? g->cfg.sms + sm->id : sm->id, h->t_ready) : GCX_INF;
        if (d < t)
            t = d;
    }
    if (cl[g->cfg.sms + sm->id].head && cl[g->cfg.sms + sm->id].head->t_ready < t)
        t = cl[g->cfg.sms + sm->id].head->t_ready;
    if (cl[sm->id].head && cl[sm->id].head->t_ready > g->now && cl[sm->id].head->t_ready < t)
        t = cl[sm->id].head->t_ready;
    return t;
}

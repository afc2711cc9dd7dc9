/* A streaming multiprocessor: warp slots and CTA slots, warp schedulers (lrr, gto, two_level) that
 * each issue at most one instruction a cycle, a register scoreboard (a cycle per register: when its
 * value is ready, GCX_INF while a load is outstanding), per-scheduler execution units with
 * latencies and initiation intervals, and the LD/ST unit: it coalesces a memory instruction's
 * lanes into line requests and hands one request a cycle to the L1D, retrying after a
 * reservation fail. Shared memory is served by the LD/ST unit with bank conflicts. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_sm_init(gcx_gpu *g, gcx_sm *sm, uint32_t id, gcx_error *err)
{
    const gcx_gpu_config *c = &g->cfg;
    memset(sm, 0, sizeof *sm);
    sm->id = id;
    sm->n_warps = (uint32_t)c->max_warps_per_sm;
    sm->n_ctas = (uint32_t)c->max_ctas_per_sm;
    uint32_t ns = (uint32_t)c->schedulers_per_sm;
    sm->n_sched = ns;
    sm->warps = calloc(sm->n_warps, sizeof *sm->warps);
    uint64_t *regs = malloc((size_t)sm->n_warps * GCX_NREGS * sizeof *regs);
    sm->ctas = calloc(sm->n_ctas, sizeof *sm->ctas);
    sm->sched_last = malloc(ns * sizeof *sm->sched_last);
    sm->sched_warps = calloc(ns, sizeof *sm->sched_warps);
    sm->sched_n = calloc(ns, sizeof *sm->sched_n);
    sm->unit_free = calloc(ns, sizeof *sm->unit_free);
    sm->ldst = calloc((size_t)c->ldst_queue, sizeof *sm->ldst);
    sm->n_loads = sm->n_warps * 32;
    sm->loads = malloc(sm->n_loads * sizeof *sm->loads);
    if (!sm->warps || !regs || !sm->ctas || !sm->sched_last || !sm->sched_warps || !sm->sched_n || !sm->unit_free ||
        !sm->ldst || !sm->loads) {
        free(regs);
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory building SM %u", id);
    }
    for (uint32_t w = 0; w < sm->n_warps; w++) {
        sm->warps[w].reg_ready = regs + (size_t)w * GCX_NREGS;
        sm->warps[w].sched = (uint8_t)(w % ns);
    }
    for (uint32_t s = 0; s < ns; s++) {
        sm->sched_last[s] = GCX_NONE;
        sm->sched_warps[s] = malloc((sm->n_warps / ns + 1) * sizeof **sm->sched_warps);
        if (!sm->sched_warps[s])
            return gcx_fail(err, GCX_ERR_NOMEM, "out of memory building SM %u", id);
    }
    /* Warp slot w belongs to scheduler w mod schedulers, as in GPGPU-Sim. */
    for (uint32_t w = 0; w < sm->n_warps; w++) {
        uint32_t s = w % ns;
        sm->sched_warps[s][sm->sched_n[s]++] = w;
    }
    for (uint32_t i = 0; i < sm->n_ctas; i++)
        sm->ctas[i].id = GCX_NONE;
    for (uint32_t i = 0; i < sm->n_loads; i++)
        sm->loads[i].next_free = i + 1 < sm->n_loads ? i + 1 : GCX_NONE;
    sm->loads_free = 0;
    sm->reply_q.cap = UINT32_MAX;
    sm->exit_wake = GCX_INF;
    if (c->l1i_size_kb > 0) {
        gcx_cache_config ic = {
            .sets = (uint32_t)(c->l1i_size_kb * 1024.0 / (double)(c->l1i_ways * c->l1i_line_bytes)),
            .ways = (uint32_t)c->l1i_ways,
            .line_bytes = (uint32_t)c->l1i_line_bytes,
            .write_back = 1,
            .write_allocate = 1,
            .policy = gcx_policy_find("lru"),
        };
        int rc = gcx_cache_init(&sm->icache, &ic, err);
        if (rc)
            return rc;
        sm->icache_on = 1;
        sm->n_ifetch = (uint32_t)c->l1i_mshr_entries;
        sm->ifetch = calloc(sm->n_ifetch, sizeof *sm->ifetch);
        if (!sm->ifetch)
            return gcx_fail(err, GCX_ERR_NOMEM, "out of memory building SM %u", id);
    }
    return gcx_l1_init(g, sm, err);
}

void gcx_sm_free(gcx_sm *sm)
{
    if (sm->warps)
        free(sm->warps[0].reg_ready);
    free(sm->warps);
    free(sm->ctas);
    free(sm->sched_last);
    if (sm->sched_warps)
        for (uint32_t s = 0; s < sm->n_sched; s++)
            free(sm->sched_warps[s]);
    free(sm->sched_warps);
    free(sm->sched_n);
    free(sm->unit_free);
    free(sm->ldst);
    free(sm->loads);
    if (sm->icache_on)
        gcx_cache_free(&sm->icache);
    free(sm->ifetch);
    gcx_l1_free(&sm->l1);
    memset(sm, 0, sizeof *sm);
}

int gcx_sm_busy(const gcx_sm *sm) { return sm->used_ctas > 0 || sm->ldst_n > 0; }

/* ---- warps -------------------------------------------------------------------------------- */

static inline const gcx_kernel *kernel_of(const gcx_gpu *g) { return &g->wl->kernels[g->kernel]; }

/* Execution unit of an instruction, GCX_UNIT_MEM if it goes through the LD/ST unit. */
static inline uint8_t unit_of(const gcx_kernel *k, uint64_t i)
{
    uint8_t cls = k->op_class[i];
    switch (cls) {
    case GCX_OP_LOAD:
    case GCX_OP_STORE:
    case GCX_OP_ATOMIC:
        if (k->space[i] == GCX_SPACE_CONST || k->width[i] == 0 || k->mask[i] == 0)
            return 0; /* constant-cache loads and accesses with no active lane: no memory traffic */
        return GCX_UNIT_MEM;
    case GCX_OP_MEMBAR:
    case GCX_OP_NOP:
        return 0;
    default:
        return cls; /* alu, sfu, fp64, tensor, branch, barrier, exit are units 0..6 */
    }
}

static inline uint64_t inst_line(const gcx_gpu *g, const gcx_sm *sm, uint32_t pc)
{
    /* Each kernel's code lives in its own region, so kernels do not share instruction lines. */
    uint64_t base = ((uint64_t)0xC0DE << 32) + ((uint64_t)g->kernel << 24);
    return (base + pc) >> sm->icache.line_shift;
}

/* Recompute when the warp's next instruction can issue: all its source and destination registers
 * must be ready (destinations too: a pending load must not be overwritten), and its instruction
 * must have been fetched. */
static void warp_refresh(const gcx_gpu *g, gcx_sm *sm, gcx_warp *w, uint64_t not_before)
{
    const gcx_kernel *k = kernel_of(g);
    uint64_t i = w->next, ready = not_before;
    if (sm->icache_on && !w->need_fetch && inst_line(g, sm, k->pc[i]) != w->fetched_line) {
        w->need_fetch = 1;
        sm->n_need_fetch++;
    }
    const uint8_t *d = k->dst + i * GCX_MAX_DST, *s = k->src + i * GCX_MAX_SRC;
    for (int j = 0; j < GCX_MAX_DST; j++)
        if (d[j] != GCX_NO_REG && w->reg_ready[d[j]] > ready)
            ready = w->reg_ready[d[j]];
    for (int j = 0; j < GCX_MAX_SRC; j++)
        if (s[j] != GCX_NO_REG && w->reg_ready[s[j]] > ready)
            ready = w->reg_ready[s[j]];
    w->ready_at = ready;
    w->head_unit = unit_of(k, i);
}

static void cta_release_barrier(gcx_gpu *g, gcx_sm *sm, gcx_cta *cta, uint64_t now)
{
    for (uint32_t j = 0; j < cta->n_warps; j++) {
        gcx_warp *w = &sm->warps[cta->first_warp + j];
        if (w->state == GCX_WARP_BARRIER) {
            w->state = GCX_WARP_ACTIVE;
            warp_refresh(g, sm, w, now + (uint64_t)g->cfg.latency[GCX_OP_BARRIER]);
        }
    }
    cta->at_barrier = 0;
}

static void cta_finish(gcx_gpu *g, gcx_sm *sm, uint32_t slot, uint64_t now)
{
    gcx_cta *cta = &sm->ctas[slot];
    const gcx_kernel *k = kernel_of(g);
    GCX_TECH_EACH(g, t)
    if (t->ops && t->ops->cta_end)
        t->ops->cta_end(t, sm->id, slot, now);
    cta->id = GCX_NONE;
    sm->used_ctas--;
    sm->used_warps -= k->warps_per_cta;
    sm->used_threads -= gcx_cta_threads(k);
    sm->used_regs -= (uint32_t)gcx_cta_regs(k);
    sm->used_shmem -= k->shmem_bytes;
    g->ctas_left--;
}

/* The warp issued its last instruction and every load it issued has been answered. */
static void warp_finish(gcx_gpu *g, gcx_sm *sm, gcx_warp *w, uint64_t now)
{
    gcx_cta *cta = &sm->ctas[w->cta_slot];
    w->state = GCX_WARP_EMPTY;
    cta->warps_live--;
    if (cta->warps_live == 0)
        cta_finish(g, sm, w->cta_slot, now);
}

/* A DRAINING warp finishes once its last instruction has completed (ready_at) and every answer it
 * waits for has arrived; until then the SM wakes at exit_wake to look at it again. */
static void warp_finish_if_done(gcx_gpu *g, gcx_sm *sm, gcx_warp *w, uint64_t now)
{
    if (w->pending_loads > 0)
        return;
    if (w->ready_at <= now)
        warp_finish(g, sm, w, now);
    else if (w->ready_at < sm->exit_wake)
        sm->exit_wake = w->ready_at;
}

/* The warp issued its last instruction, which completes at `done`. It leaves the barrier at once
 * (the others need not wait for its memory answers), which may release the warps waiting there. */
static void warp_drain(gcx_gpu *g, gcx_sm *sm, gcx_warp *w, uint64_t done, uint64_t now)
{
    gcx_cta *cta = &sm->ctas[w->cta_slot];
    cta->warps_running--;
    if (cta->at_barrier > 0 && cta->at_barrier == cta->warps_running)
        cta_release_barrier(g, sm, cta, now);
    w->state = GCX_WARP_DRAINING;
    w->ready_at = done;
    warp_finish_if_done(g, sm, w, now);
}

/* Finish the warps whose exits completed by now. */
static int exits_due(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    int done = 0;
    sm->exit_wake = GCX_INF;
    for (uint32_t j = 0; j < sm->n_warps; j++) {
        gcx_warp *w = &sm->warps[j];
        if (w->state != GCX_WARP_DRAINING || w->pending_loads > 0)
            continue;
        done |= w->ready_at <= now;
        warp_finish_if_done(g, sm, w, now);
    }
    if (done)
        sm->sched_wake = 0;
    return done;
}

void gcx_sm_launch_cta(gcx_gpu *g, gcx_sm *sm, uint32_t slot, uint32_t cta_index, uint64_t now)
{
    const gcx_kernel *k = kernel_of(g);
    gcx_cta *cta = &sm->ctas[slot];
    cta->id = k->cta_ids[cta_index];
    cta->first_warp = slot * k->warps_per_cta;
    cta->n_warps = k->warps_per_cta;
    cta->warps_live = 0;
    cta->warps_running = 0;
    cta->at_barrier = 0;
    cta->priority = 0;
    sm->sched_wake = 0;
    sm->used_ctas++;
    sm->used_warps += k->warps_per_cta;
    sm->used_threads += gcx_cta_threads(k);
    sm->used_regs += (uint32_t)gcx_cta_regs(k);
    sm->used_shmem += k->shmem_bytes;
    GCX_TECH_EACH(g, t)
    if (t->ops && t->ops->cta_start)
        t->ops->cta_start(t, sm->id, slot, cta->id, now);
    GCX_TECH_EACH(g, t)
    if (t->ops && t->ops->warp_priority)
        cta->priority += t->ops->warp_priority(t, sm->id, slot);
    if (cta->priority < 0)
        cta->priority = 0; /* priorities are levels 0 (normal) and up */
    for (uint32_t j = 0; j < k->warps_per_cta; j++) {
        gcx_warp *w = &sm->warps[cta->first_warp + j];
        size_t ws = (size_t)cta_index * k->warps_per_cta + j;
        w->next = k->warp_first[ws];
        w->end = k->warp_end[ws];
        w->cta_slot = slot;
        w->warp_in_cta = (uint16_t)j;
        w->pending_loads = 0;
        w->age = ++sm->age_clock;
        if (w->next == w->end) {
            w->state = GCX_WARP_EMPTY; /* a warp with no instructions finishes at once */
            continue;
        }
        cta->warps_live++;
        cta->warps_running++;
        w->state = GCX_WARP_ACTIVE;
        w->need_fetch = w->fetch_wait = 0;
        w->fetched_line = GCX_INF;
        memset(w->reg_ready, 0, GCX_NREGS * sizeof *w->reg_ready);
        warp_refresh(g, sm, w, now);
    }
    if (cta->warps_live == 0)
        cta_finish(g, sm, slot, now);
}

/* Re-read the priority of every resident CTA (techniques change it at phase boundaries). */
void gcx_sm_refresh_priorities(gcx_gpu *g, gcx_sm *sm)
{
    for (uint32_t s = 0; s < sm->n_ctas; s++) {
        gcx_cta *cta = &sm->ctas[s];
        if (cta->id == GCX_NONE)
            continue;
        cta->priority = 0;
        GCX_TECH_EACH(g, t)
        if (t->ops && t->ops->warp_priority)
            cta->priority += t->ops->warp_priority(t, sm->id, s);
        if (cta->priority < 0)
            cta->priority = 0;
    }
    sm->sched_wake = 0;
}

/* ---- answers to loads --------------------------------------------------------------------- */

/* ATA-Cache's "L1 cache latency" (Xu et al., Fig. 10): the completion time of the L1D accesses of all
 * requests of one load instruction. A request's access is complete when an L1D (its own, another one
 * of the cluster, or its home) answers it with data, or when its miss leaves the L1Ds for the L2 (its
 * own fetch or one it merged with went to the L2, or it waits for another L1D's fetch): what comes
 * after is the L2's and DRAM's time. Reservation fails, probes, the cluster crossbar and the data
 * banks are inside it. Only statistics change here. */
void gcx_sm_l1_done(gcx_gpu *g, gcx_req *r, uint64_t now)
{
    if (r->load == GCX_NONE || (r->flags & GCX_RF_L1_DONE))
        return;
    r->flags |= GCX_RF_L1_DONE;
    gcx_sm *sm = &g->sms[r->sm];
    gcx_load *ld = &sm->loads[r->load];
    if (--ld->l1_remaining > 0 || ld->store)
        return;
    sm->l1_access_latency_sum += now - ld->t_issue;
    sm->l1_loads_done++;
}

void gcx_sm_answer(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    gcx_sm_l1_done(g, r, now);
    uint32_t li = r->load;
    gcx_req_free(g, r);
    if (li == GCX_NONE)
        return;
    gcx_load *ld = &sm->loads[li];
    if (--ld->remaining > 0)
        return;
    gcx_warp *w = &sm->warps[ld->warp];
    if (ld->store) {
        sm->store_ack_latency_sum += now - ld->t_issue;
        sm->stores_acked++;
    } else {
        for (int j = 0; j < 2; j++)
            if (ld->dst[j] != GCX_NO_REG)
                w->reg_ready[ld->dst[j]] = now;
        sm->load_latency_sum += now - ld->t_issue;
        sm->loads_done++;
    }
    ld->next_free = sm->loads_free;
    sm->loads_free = li;
    w->pending_loads--;
    sm->sched_wake = 0;
    if (w->state == GCX_WARP_ACTIVE && w->ready_at == GCX_INF)
        warp_refresh(g, sm, w, now);
    else if (w->state == GCX_WARP_DRAINING)
        warp_finish_if_done(g, sm, w, now);
}

/* ---- coalescing --------------------------------------------------------------------------- */

/* Split the active lanes of memory instruction i into one request per L1D line touched, each with
 * the 4-byte words its lanes touch, in order of first appearance. Returns the list. An atomic's
 * lanes that touch the same word cannot share a request, as in GPGPU-Sim's
 * memory_coalescing_arch_atomic: a lane joins the first request for its line whose words it does
 * not touch, or starts a new one (32 lanes adding to one word are 32 requests). */
static gcx_req *coalesce(gcx_gpu *g, gcx_sm *sm, gcx_warp *w, uint32_t wslot, const gcx_kernel *k, uint64_t i,
                         uint32_t load, uint32_t *count, uint64_t now)
{
    uint32_t line_bytes = (uint32_t)g->cfg.l1d_line_bytes, shift = g->l1_line_shift;
    uint64_t lines[64], words[64];
    uint32_t n = 0;
    uint32_t mask = k->mask[i], width = k->width[i];
    const uint64_t *a = k->addresses + k->addr_offset[i];
    uint32_t lanes = (uint32_t)gcx_popcount64(mask);
    int atomic = k->op_class[i] == GCX_OP_ATOMIC;
    for (uint32_t l = 0; l < lanes; l++) {
        uint64_t first = a[l], last = a[l] + width - 1;
        if (last < first)
            last = UINT64_MAX; /* an access at the very top of the address space */
        for (uint64_t la = first >> shift; la <= last >> shift; la++) {
            uint64_t lo = la << shift, hi = lo + line_bytes - 1;
            uint64_t b0 = (first > lo ? first : lo) - lo, b1 = (last < hi ? last : hi) - lo;
            uint64_t wm = 0;
            for (uint64_t wd = b0 >> 2; wd <= (b1 >> 2); wd++)
                wm |= 1ull << wd;
            uint32_t j = 0;
            while (j < n && (lines[j] != la || (atomic && (words[j] & wm))))
                j++;
            if (j == n) {
                if (n == 64)
                    break; /* cannot happen: 32 lanes make at most 64 requests with width <= line */
                lines[n] = la;
                words[n++] = 0;
            }
            words[j] |= wm;
            if (la == UINT64_MAX >> shift)
                break;
        }
    }
    gcx_req *head = NULL, **tail = &head;
    uint8_t op = k->op_class[i];
    for (uint32_t j = 0; j < n; j++) {
        gcx_req *r = gcx_req_new(g);
        r->addr = lines[j] << shift;
        r->words = words[j];
        r->sectors = (uint8_t)gcx_sector_mask_of_words(words[j], line_bytes, 32);
        r->type = op == GCX_OP_LOAD ? GCX_REQ_READ : op == GCX_OP_STORE ? GCX_REQ_WRITE : GCX_REQ_ATOMIC;
        r->space = k->space[i] == GCX_SPACE_TEX ? GCX_SPACE_GLOBAL : k->space[i];
        r->pc = k->pc[i];
        r->sm = sm->id;
        r->home = sm->id;
        r->warp = (uint16_t)wslot;
        r->cta_slot = (uint16_t)w->cta_slot;
        r->lanes = (uint8_t)lanes;
        r->load = load;
        r->t_issue = now;
        r->flags = 0;
        r->tech[0] = r->tech[1] = -1;
        if (k->flags[i] & GCX_IF_BYPASS_L1)
            r->flags |= GCX_RF_BYPASS_L1;
        r->line = GCX_NONE;
        GCX_TECH_EACH(g, t)
        if (t->ops && t->ops->ldst_request)
            t->ops->ldst_request(t, sm->id, r, now);
        *tail = r;
        tail = &r->next;
    }
    *count = n;
    return head;
}

/* Cycles a shared-memory instruction occupies the LD/ST unit: the largest number of distinct
 * 4-byte words any bank must deliver (a word read by several lanes is broadcast). */
static uint32_t smem_conflict_degree(const gcx_gpu *g, const gcx_kernel *k, uint64_t i)
{
    uint32_t banks = (uint32_t)g->cfg.smem_banks, width = k->width[i];
    uint32_t lanes = (uint32_t)gcx_popcount64(k->mask[i]);
    const uint64_t *a = k->addresses + k->addr_offset[i];
    uint64_t words[128];
    uint32_t n = 0;
    for (uint32_t l = 0; l < lanes && n < 128; l++) {
        uint64_t w0 = a[l] >> 2, w1 = (a[l] + (width ? width : 1) - 1) >> 2;
        for (uint64_t w = w0; w <= w1 && n < 128; w++)
            words[n++] = w;
    }
    /* insertion sort, then count distinct words per bank */
    for (uint32_t x = 1; x < n; x++) {
        uint64_t v = words[x];
        uint32_t y = x;
        while (y > 0 && words[y - 1] > v) {
            words[y] = words[y - 1];
            y--;
        }
        words[y] = v;
    }
    uint32_t per_bank[1024] = {0}, degree = 1;
    for (uint32_t x = 0; x < n; x++) {
        if (x > 0 && words[x] == words[x - 1])
            continue;
        uint32_t b = (uint32_t)(words[x] % banks);
        if (++per_bank[b] > degree)
            degree = per_bank[b];
    }
    return degree;
}

/* A shared-memory instruction reached the head of the LD/ST unit at `start`: its bank conflicts
 * hold the unit `degree` cycles from then (as GPGPU-Sim's ldst_unit::shared_cycle), and its
 * results are ready smem_latency cycles after that. The caller refreshes the waiting warp. */
static void smem_start(gcx_sm *sm, gcx_meminst *mi, uint64_t start, const gcx_gpu_config *c)
{
    gcx_warp *w = &sm->warps[mi->warp];
    mi->t_ready = start + mi->degree;
    for (int j = 0; j < GCX_MAX_DST; j++)
        if (mi->dst[j] != GCX_NO_REG)
            w->reg_ready[mi->dst[j]] = mi->t_ready + (uint64_t)c->smem_latency;
}

/* ---- issue -------------------------------------------------------------------------------- */

static int can_issue(const gcx_gpu *g, const gcx_sm *sm, const gcx_warp *w, uint32_t s, uint64_t now)
{
    if (w->state != GCX_WARP_ACTIVE || w->ready_at > now || w->need_fetch)
        return 0;
    if (w->head_unit == GCX_UNIT_MEM)
        return sm->ldst_n < (uint32_t)g->cfg.ldst_queue && sm->loads_free != GCX_NONE;
    return sm->unit_free[s][w->head_unit] <= now;
}

static void issue(gcx_gpu *g, gcx_sm *sm, uint32_t wslot, uint32_t s, uint64_t now)
{
    const gcx_kernel *k = kernel_of(g);
    const gcx_gpu_config *c = &g->cfg;
    gcx_warp *w = &sm->warps[wslot];
    uint64_t i = w->next;
    uint8_t cls = k->op_class[i];
    uint32_t lanes = (uint32_t)gcx_popcount64(k->mask[i]);
    const uint8_t *dst = k->dst + i * GCX_MAX_DST;
    sm->warp_insts++;
    sm->thread_insts += lanes;
    g->inst_total++;

    if (w->head_unit != GCX_UNIT_MEM) {
        uint32_t unit = w->head_unit;
        uint64_t lat = (uint64_t)c->latency[unit];
        if (cls == GCX_OP_LOAD && k->space[i] == GCX_SPACE_CONST)
            lat = (uint64_t)c->const_latency;
        for (int j = 0; j < GCX_MAX_DST; j++)
            if (dst[j] != GCX_NO_REG)
                w->reg_ready[dst[j]] = now + lat;
        sm->unit_free[s][unit] = now + (uint64_t)c->initiation[unit];
        if (cls == GCX_OP_BARRIER) {
            gcx_cta *cta = &sm->ctas[w->cta_slot];
            w->next++;
            if (w->next == w->end) {
                /* A barrier as the last instruction: the warp leaves, which may release the others. */
                warp_drain(g, sm, w, now, now);
                return;
            }
            w->state = GCX_WARP_BARRIER;
            cta->at_barrier++;
            if (cta->at_barrier == cta->warps_running)
                cta_release_barrier(g, sm, cta, now);
            return;
        }
    } else if (k->space[i] == GCX_SPACE_SHARED) {
        uint32_t degree = smem_conflict_degree(g, k, i);
        if (cls == GCX_OP_ATOMIC)
            degree *= 2; /* read then write */
        gcx_meminst *mi = &sm->ldst[(sm->ldst_head + sm->ldst_n++) % (uint32_t)c->ldst_queue];
        mi->reqs = NULL;
        mi->warp = wslot;
        mi->degree = degree;
        mi->t_ready = GCX_INF;
        for (int j = 0; j < GCX_MAX_DST; j++) {
            mi->dst[j] = dst[j];
            if (dst[j] != GCX_NO_REG)
                w->reg_ready[dst[j]] = GCX_INF;
        }
        /* Its bank cycles start when it is at the head of the in-order LD/ST unit: now, if nothing
         * is ahead of it; else when what is ahead leaves (ldst_pop). */
        if (sm->ldst_n == 1)
            smem_start(sm, mi, now, c);
    } else {
        uint32_t load = GCX_NONE, n;
        /* Loads and atomics wait for their data; stores, with core.store_acks, for the L2's
         * acknowledgements, which hold the warp (and its CTA) until they arrive, as in GPGPU-Sim. */
        int answers = cls != GCX_OP_STORE || c->store_acks;
        if (answers) {
            load = sm->loads_free;
            sm->loads_free = sm->loads[load].next_free;
        }
        gcx_req *reqs = coalesce(g, sm, w, wslot, k, i, load, &n, now);
        if (answers) {
            gcx_load *ld = &sm->loads[load];
            ld->warp = wslot;
            ld->remaining = n;
            ld->l1_remaining = n;
            ld->t_issue = now;
            ld->store = cls == GCX_OP_STORE;
            ld->dst[0] = dst[0];
            ld->dst[1] = dst[1];
            /* A store's acknowledgement carries no data: a destination register a trace gives a
             * store is not written by it, so only loads and atomics hold theirs. */
            if (!ld->store)
                for (int j = 0; j < GCX_MAX_DST; j++)
                    if (dst[j] != GCX_NO_REG)
                        w->reg_ready[dst[j]] = GCX_INF;
            w->pending_loads++;
        }
        gcx_meminst *mi = &sm->ldst[(sm->ldst_head + sm->ldst_n++) % (uint32_t)c->ldst_queue];
        mi->reqs = reqs;
        mi->warp = wslot;
        mi->t_ready = now;
        g->reqs_made += n;
    }
    w->next++;
    if (w->next == w->end) {
        /* An exit is done core.exit_latency cycles after it issues. */
        warp_drain(g, sm, w, cls == GCX_OP_EXIT ? now + (uint64_t)c->latency[GCX_OP_EXIT] : now, now);
        return;
    }
    /* A branch holds its warp for core.branch_latency cycles: the warp issues nothing until the
     * branch has resolved where it goes next. */
    uint64_t next = now + 1;
    if (cls == GCX_OP_BRANCH && (uint64_t)c->latency[GCX_OP_BRANCH] > 1)
        next = now + (uint64_t)c->latency[GCX_OP_BRANCH];
    warp_refresh(g, sm, w, next);
}

/* Pick the warp scheduler `s` issues this cycle, or GCX_NONE. Warps of CTAs with a higher
 * technique priority go first; within a priority level the policy decides. */
static uint32_t pick(const gcx_gpu *g, gcx_sm *sm, uint32_t s, uint64_t now, int level)
{
    const uint32_t *ws = sm->sched_warps[s];
    uint32_t n = sm->sched_n[s];
    if (n == 0)
        return GCX_NONE;
    int policy = (int)g->cfg.scheduler;
    uint32_t last = sm->sched_last[s];
#define ELIGIBLE(slot) (sm->ctas[sm->warps[slot].cta_slot].priority == level && can_issue(g, sm, &sm->warps[slot], s, now))
    if (policy == GCX_SCHED_GTO) {
        if (last != GCX_NONE && ELIGIBLE(last))
            return last;
        uint32_t best = GCX_NONE;
        uint64_t best_age = GCX_INF;
        for (uint32_t j = 0; j < n; j++) {
            uint32_t slot = ws[j];
            if (sm->warps[slot].age < best_age && ELIGIBLE(slot)) {
                best = slot;
                best_age = sm->warps[slot].age;
            }
        }
        return best;
    }
    /* Round robin from the warp after the last one issued. */
    uint32_t start = 0;
    if (last != GCX_NONE)
        for (uint32_t j = 0; j < n; j++)
            if (ws[j] == last) {
                start = j + 1;
                break;
            }
    if (start >= n)
        start = 0;
    if (policy == GCX_SCHED_LRR) {
        for (uint32_t j = 0, x = start; j < n; j++, x = x + 1 == n ? 0 : x + 1) {
            uint32_t slot = ws[x];
            if (ELIGIBLE(slot))
                return slot;
        }
        return GCX_NONE;
    }
    /* Two-level: the active set is the `two_level_active` oldest warps not waiting on a load;
     * warps waiting on memory drop to the pending set until their data returns. */
    uint32_t active_cap = (uint32_t)g->cfg.two_level_active;
    uint64_t limit_age = GCX_INF;
    {
        /* The age of the active_cap-th oldest warp not waiting on memory bounds the active set. */
        uint64_t ages[2048];
        uint32_t m = 0;
        for (uint32_t j = 0; j < n; j++) {
            const gcx_warp *w = &sm->warps[ws[j]];
            if (w->state == GCX_WARP_ACTIVE && w->ready_at != GCX_INF)
                ages[m++] = w->age;
        }
        if (m > active_cap) {
            /* partial selection of the active_cap smallest ages */
            for (uint32_t x = 0; x < active_cap; x++) {
                uint32_t mi = x;
                for (uint32_t y = x + 1; y < m; y++)
                    if (ages[y] < ages[mi])
                        mi = y;
                uint64_t t = ages[x];
                ages[x] = ages[mi];
                ages[mi] = t;
            }
            limit_age = ages[active_cap - 1];
        }
    }
    for (uint32_t j = 0, x = start; j < n; j++, x = x + 1 == n ? 0 : x + 1) {
        uint32_t slot = ws[x];
        if (sm->warps[slot].age <= limit_age && ELIGIBLE(slot))
            return slot;
    }
    return GCX_NONE;
#undef ELIGIBLE
}

/* The highest issue priority among resident CTAs (0 when no technique asks for any). */
static int max_priority(const gcx_sm *sm)
{
    int top = 0;
    for (uint32_t c = 0; c < sm->n_ctas; c++)
        if (sm->ctas[c].id != GCX_NONE && sm->ctas[c].priority > top)
            top = sm->ctas[c].priority;
    return top;
}

/* ---- instruction fetch --------------------------------------------------------------------- */

/* One L1I lookup for warp `slot`: a hit makes its next instruction issuable; a miss joins the
 * fetch of that line or starts one (through the L1D's miss queue, like GPGPU-Sim's instruction
 * fetches). Returns 0 when the fetch must be retried (no free fetch entry or miss-queue slot). */
static int ifetch(gcx_gpu *g, gcx_sm *sm, uint32_t slot, uint64_t now)
{
    gcx_warp *w = &sm->warps[slot];
    gcx_cache *c = &sm->icache;
    uint64_t line = inst_line(g, sm, kernel_of(g)->pc[w->next]);
    uint32_t set = gcx_cache_set_of(c, line);
    int way = gcx_cache_find(c, set, line);
    if (way >= 0) {
        sm->l1i_accesses++;
        c->cfg.policy->on_hit(c, set * c->cfg.ways + (uint32_t)way);
        w->fetched_line = line;
        w->need_fetch = 0;
        sm->n_need_fetch--;
        sm->sched_wake = 0;
        return 1;
    }
    uint32_t free_slot = GCX_NONE;
    for (uint32_t e = 0; e < sm->n_ifetch; e++) {
        if (sm->ifetch[e].used && sm->ifetch[e].line == line) {
            sm->l1i_accesses++;
            sm->l1i_misses++;
            sm->l1i_mshr_hits++;
            w->fetch_wait = 1;
            sm->n_fetch_wait++;
            w->next_waiter = sm->ifetch[e].first_waiter;
            sm->ifetch[e].first_waiter = slot;
            return 1;
        }
        if (!sm->ifetch[e].used && free_slot == GCX_NONE)
            free_slot = e;
    }
    if (free_slot == GCX_NONE || !gcx_l1_miss_queue_has_room(&sm->l1, 1))
        return 0;
    sm->l1i_accesses++;
    sm->l1i_misses++;
    gcx_req *r = gcx_req_new(g);
    /* The words and 32-byte sectors of the L2 line (at least as long as this one) that it needs. */
    uint32_t line_bytes = c->cfg.line_bytes;
    r->addr = line << c->line_shift;
    uint32_t offset = (uint32_t)(r->addr & (uint64_t)(g->cfg.l2_line_bytes - 1));
    r->words = (line_bytes >= 256 ? ~0ull : (1ull << (line_bytes / 4)) - 1) << (offset / 4);
    r->sectors = (uint8_t)(((1u << (line_bytes / 32)) - 1) << (offset / 32));
    r->type = GCX_REQ_READ;
    r->space = GCX_SPACE_INST;
    r->sm = r->home = sm->id;
    r->line = free_slot;
    r->lanes = 32;
    r->t_issue = now;
    gcx_l1_miss_queue_push(&sm->l1, r, now + 1);
    sm->ifetch[free_slot] = (gcx_ifetch){.line = line, .first_waiter = slot, .used = 1};
    w->fetch_wait = 1;
    sm->n_fetch_wait++;
    w->next_waiter = GCX_NONE;
    return 1;
}

/* An instruction line arrived: fill the L1I and release the warps waiting for it. */
void gcx_sm_ifill(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now)
{
    gcx_ifetch *e = &sm->ifetch[r->line];
    gcx_cache *c = &sm->icache;
    uint32_t set = gcx_cache_set_of(c, e->line);
    int v = gcx_cache_pick_victim(c, set);
    uint32_t line = set * c->cfg.ways + (uint32_t)v;
    gcx_cache_invalidate(c, line, NULL, NULL);
    gcx_cache_install(c, line, e->line, 1, now);
    for (uint32_t slot = e->first_waiter; slot != GCX_NONE;) {
        gcx_warp *w = &sm->warps[slot];
        uint32_t next = w->next_waiter;
        w->fetched_line = e->line;
        w->need_fetch = w->fetch_wait = 0;
        sm->n_need_fetch--;
        sm->n_fetch_wait--;
        slot = next;
    }
    e->used = 0;
    sm->sched_wake = 0;
    gcx_req_free(g, r);
}

static int fetch_stage(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    if (sm->n_need_fetch == sm->n_fetch_wait)
        return 0; /* no lookup due: every warp that needs a line is waiting for it */
    uint32_t slot = sm->fetch_rr < sm->n_warps ? sm->fetch_rr : 0;
    for (uint32_t j = 0; j < sm->n_warps; j++, slot = slot + 1 == sm->n_warps ? 0 : slot + 1) {
        const gcx_warp *w = &sm->warps[slot];
        if (!w->need_fetch || w->fetch_wait)
            continue;
        sm->fetch_rr = slot + 1;
        return ifetch(g, sm, slot, now);
    }
    return 0;
}

static uint64_t warps_wake(gcx_gpu *g, gcx_sm *sm);

/* ---- the LD/ST unit ------------------------------------------------------------------------ */

/* The head instruction leaves the LD/ST unit; a shared-memory instruction behind it starts its
 * bank cycles at `next_start`. */
static void ldst_pop(gcx_gpu *g, gcx_sm *sm, uint64_t next_start, uint64_t now)
{
    uint32_t cap = (uint32_t)g->cfg.ldst_queue;
    sm->ldst_head = (sm->ldst_head + 1) % cap;
    sm->ldst_n--;
    sm->sched_wake = 0;
    if (sm->ldst_n == 0)
        return;
    gcx_meminst *mi = &sm->ldst[sm->ldst_head];
    if (mi->reqs)
        return;
    smem_start(sm, mi, next_start, &g->cfg);
    gcx_warp *w = &sm->warps[mi->warp];
    if (w->state == GCX_WARP_ACTIVE && w->ready_at == GCX_INF)
        warp_refresh(g, sm, w, now);
}

static int ldst_cycle(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    if (sm->ldst_n == 0)
        return 0;
    gcx_meminst *mi = &sm->ldst[sm->ldst_head];
    if (!mi->reqs) {
        if (mi->t_ready > now)
            return 0;
        ldst_pop(g, sm, mi->t_ready, now); /* the next one's bank cycles follow without a gap */
        return 1;
    }
    /* One request a cycle; with the L1D's latency queue, as in GPGPU-Sim 4.0, as many of the
     * instruction's requests as there are banks, while each enters its bank's pipeline. */
    uint32_t most = g->cfg.l1d_latency_queue ? (uint32_t)g->cfg.l1d_banks : 1;
    for (uint32_t k = 0; k < most; k++) {
        gcx_req *r = mi->reqs;
        gcx_req *rest = r->next;
        r->next = NULL;
        int fail = gcx_l1_access(g, sm, r, now);
        if (fail) {
            r->next = rest;
            sm->ldst_fail = fail;
            return k > 0;
        }
        sm->ldst_fail = 0;
        mi->reqs = rest;
        if (!rest) {
            ldst_pop(g, sm, now + 1, now); /* the unit handed a request over this cycle */
            return 1;
        }
        if (!(r->flags & GCX_RF_PIPED))
            return 1;
    }
    return 1;
}

int gcx_sm_cycle(gcx_gpu *g, gcx_sm *sm)
{
    uint64_t now = g->now;
    int progress = ldst_cycle(g, sm, now);
    if (sm->used_ctas == 0)
        return progress;
    if (now >= sm->exit_wake)
        progress |= exits_due(g, sm, now);
    progress |= fetch_stage(g, sm, now);
    if (now < sm->sched_wake)
        return progress;
    int top = max_priority(sm), issued = 0;
    for (uint32_t s = 0; s < (uint32_t)g->cfg.schedulers_per_sm; s++) {
        uint32_t slot = GCX_NONE;
        for (int level = top; level >= 0 && slot == GCX_NONE; level--)
            slot = pick(g, sm, s, now, level);
        if (slot == GCX_NONE)
            continue;
        sm->sched_last[s] = slot;
        issue(g, sm, slot, s, now);
        issued = 1;
    }
    if (issued)
        sm->sched_wake = 0;
    else
        sm->sched_wake = warps_wake(g, sm);
    return progress | issued;
}

/* Earliest cycle any warp could issue without an outside event (a load answer, an instruction
 * fill, the LD/ST unit draining): GCX_INF if none can. A pending L1I lookup means next cycle. */
static uint64_t warps_wake(gcx_gpu *g, gcx_sm *sm)
{
    uint64_t t = GCX_INF;
    if (sm->n_need_fetch > sm->n_fetch_wait)
        return g->now + 1; /* an L1I lookup is due */
    for (uint32_t w = 0; w < sm->n_warps; w++) {
        const gcx_warp *wp = &sm->warps[w];
        if (wp->state != GCX_WARP_ACTIVE || wp->ready_at == GCX_INF || wp->need_fetch)
            continue;
        uint64_t r = wp->ready_at;
        if (wp->head_unit == GCX_UNIT_MEM) {
            /* Blocked by a full LD/ST unit or load table: only a memory event can free it. */
            if (sm->ldst_n >= (uint32_t)g->cfg.ldst_queue || sm->loads_free == GCX_NONE)
                continue;
        } else if (sm->unit_free[wp->sched][wp->head_unit] > r) {
            r = sm->unit_free[wp->sched][wp->head_unit];
        }
        if (r < t)
            t = r;
    }
    return t;
}

uint64_t gcx_sm_next_event(gcx_gpu *g, gcx_sm *sm)
{
    uint64_t t = GCX_INF;
    if (sm->ldst_n > 0) {
        const gcx_meminst *mi = &sm->ldst[sm->ldst_head];
        /* A request waiting for the L1D retries every cycle; the L1D's own events wake it. */
        if (!mi->reqs)
            t = mi->t_ready;
    }
    if (sm->used_ctas == 0)
        return t;
    if (sm->exit_wake < t)
        t = sm->exit_wake;
    uint64_t w = sm->sched_wake ? sm->sched_wake : warps_wake(g, sm);
    return w < t ? w : t;
}

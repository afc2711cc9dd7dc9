/* Cache decay (Kaxiras, Hu, Martonosi, ISCA 2001) for the L1Ds and the L2: a line not accessed for
 * decay.interval cycles is switched off (gated Vdd) and its data lost; dirty data is written back.
 *
 * Semantics: every line starts OFF and a fill powers it ON; an access or a fill restarts the line's
 * idle count; a line idle for decay.interval cycles is OFF from that cycle on, its tag invalidated,
 * so a later access misses; an evicted line is OFF until its next fill. Lazy: before the cache looks
 * up a set (its own lookups, and in a shared-L1 cluster another L1D's tag checks, so no SM finds
 * decayed data), the set's lines whose decay cycle has passed are switched off (the OFF residency
 * starts at the decay cycle; the writeback of a dirty line leaves at the lookup, when the model next
 * touches the set, which changes no hit or miss; the line's data and residency end at the decay
 * cycle all the same). At the end of the run lines past their decay cycle are OFF and without data
 * from it and count as decays, dirty ones as dirty decays; their writebacks, like those of every
 * line still dirty when a run ends, are not simulated. This is the reference the drowsy technique is
 * compared against: it saves more leakage per idle line but pays misses for data it threw away.
 *
 * A request the cache refuses looks its set up again on every cycle it retries, and may find a line
 * whose decay cycle has come. The cycle loop skips retries that would change nothing; with decay a
 * retry can switch a line off, so the loop is told every decay cycle (next_event) and stops there:
 * a run gives the same results wherever else the loop stops (time-series samples, other events). */
#include <stdio.h>
#include <stdlib.h>

#include "sim/gpu.h"

enum { P_INTERVAL, N_PARAMS };

static const gcx_param_spec decay_params[N_PARAMS] = {
    [P_INTERVAL] = {"decay.interval", "idle cycles after which a line is switched off and its data lost", 8192, 1,
                    1e12, 1},
};

typedef struct decay_due_at {
    uint64_t cycle;
    uint32_t line; /* cache * lines + line */
} decay_due_at;

typedef struct decay_state {
    uint32_t lines, n_caches;
    uint64_t interval;
    uint64_t *touched; /* [cache * lines + line] cycle of the last access or fill */
    uint8_t *live;     /* the line holds data that can decay */
    uint64_t decays, decays_dirty;
    /* Decay cycles to come, earliest first (a binary min-heap). An access pushes the line's new one
     * and leaves the old one, which is dropped when it reaches the top: cheaper than finding it. */
    decay_due_at *due;
    size_t n_due, cap_due;
    int oom;
} decay_state;

static void due_push(decay_state *st, uint32_t line, uint64_t cycle)
{
    if (st->n_due == st->cap_due) {
        size_t cap = st->cap_due ? st->cap_due * 2 : 1024;
        decay_due_at *d = realloc(st->due, cap * sizeof *d);
        if (!d) {
            st->oom = 1;
            return;
        }
        st->due = d;
        st->cap_due = cap;
    }
    size_t i = st->n_due++;
    while (i > 0 && st->due[(i - 1) / 2].cycle > cycle) {
        st->due[i] = st->due[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    st->due[i] = (decay_due_at){cycle, line};
}

static void due_pop(decay_state *st)
{
    decay_due_at last = st->due[--st->n_due];
    size_t i = 0, n = st->n_due;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && st->due[c + 1].cycle < st->due[c].cycle)
            c++;
        if (st->due[c].cycle >= last.cycle)
            break;
        st->due[i] = st->due[c];
        i = c;
    }
    if (n)
        st->due[i] = last;
}

/* The line `i` (cache * lines + line) was accessed or filled at `now`: it decays interval cycles on. */
static void touch(decay_state *st, size_t i, uint64_t now)
{
    st->live[i] = 1;
    st->touched[i] = now;
    due_push(st, (uint32_t)i, now + st->interval);
}

static gcx_tcache *cache_of(gcx_tech *t, uint32_t i)
{
    gcx_gpu *g = t->gpu;
    return t->ops->kind == GCX_TECH_L1D_POWER ? &g->sms[i].l1.tc : &g->l2[i].tc;
}

static int decay_init(gcx_tech *t, gcx_error *err)
{
    gcx_gpu *g = t->gpu;
    decay_state *st = calloc(1, sizeof *st);
    if (!st)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the decay technique");
    t->state = st;
    st->n_caches = (uint32_t)(t->ops->kind == GCX_TECH_L1D_POWER ? g->cfg.sms : g->cfg.l2_partitions);
    st->lines = cache_of(t, 0)->c.n_lines;
    st->interval = (uint64_t)t->params[P_INTERVAL];
    size_t n = (size_t)st->n_caches * st->lines;
    st->touched = calloc(n, sizeof *st->touched);
    st->live = calloc(n, 1);
    if (!st->touched || !st->live)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the decay state of %zu lines", n);
    for (uint32_t c = 0; c < st->n_caches; c++) {
        gcx_tcache *tc = cache_of(t, c);
        for (uint32_t line = 0; line < st->lines; line++)
            gcx_tcache_set_state(tc, line, GCX_LINE_OFF, 0);
    }
    return GCX_OK;
}

static void decay_release(gcx_tech *t)
{
    decay_state *st = t->state;
    if (!st)
        return;
    free(st->touched);
    free(st->live);
    free(st->due);
    free(st);
    t->state = NULL;
}

/* Data placed before the kernel by a prefill (L2 MemcpyHtoD) is live from the kernel's start. */
static void decay_kernel_start(gcx_tech *t, uint32_t kernel, uint64_t now)
{
    decay_state *st = t->state;
    for (uint32_t c = 0; c < st->n_caches; c++) {
        gcx_tcache *tc = cache_of(t, c);
        for (uint32_t line = 0; line < st->lines; line++) {
            size_t i = (size_t)c * st->lines + line;
            if (!st->live[i] && tc->c.meta[line].valid && !tc->c.meta[line].reserved) {
                gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
                touch(st, i, now);
            }
        }
    }
}

/* Whether `line` of cache tc has reached its decay cycle by `now` and not been switched off yet. */
static inline int decay_due(const decay_state *st, const gcx_tcache *tc, uint32_t line, uint64_t now)
{
    size_t i = (size_t)tc->id * st->lines + line;
    return st->live[i] && !tc->c.meta[line].reserved && st->touched[i] + st->interval <= now;
}

static void decay_set_lookup(gcx_tech *t, gcx_tcache *tc, uint32_t set, uint64_t now)
{
    decay_state *st = t->state;
    uint32_t ways = tc->c.cfg.ways;
    for (uint32_t line = set * ways; line < (set + 1) * ways; line++) {
        size_t i = (size_t)tc->id * st->lines + line;
        if (st->live[i] && tc->c.tag[line] == GCX_TAG_NONE)
            st->live[i] = 0; /* replaced without an eviction hook (a prefill) */
        if (!decay_due(st, tc, line, now))
            continue;
        st->decays++;
        st->decays_dirty += tc->c.meta[line].dirty != 0;
        /* The data was lost at the decay cycle: the line's residency (dead time) ends there, not at
         * this lookup, which comes whenever the set is next used; only the writeback leaves now. */
        uint64_t lost = st->touched[i] + st->interval;
        if (t->ops->kind == GCX_TECH_L1D_POWER)
            gcx_l1_power_off(t->gpu, &t->gpu->sms[tc->id], line, lost, now);
        else
            gcx_l2_power_off(t->gpu, tc, line, lost, now, 0);
        st->live[i] = 0;
    }
}

/* A look that changes nothing (the replication sample at a fill) must not switch lines off, which
 * would drop data, write it back and count an invalidation at a time the run does not choose; it
 * sees a line past its decay cycle as the next lookup of its set will: without data. */
static int decay_line_live(gcx_tech *t, const gcx_tcache *tc, uint32_t line, uint64_t now)
{
    return !decay_due(t->state, tc, line, now);
}

static uint32_t decay_line_access(gcx_tech *t, gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now)
{
    decay_state *st = t->state;
    size_t i = (size_t)tc->id * st->lines + line;
    if (tc->c.meta[line].state != GCX_LINE_ON) /* data placed without a fill (prefill) */
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
    touch(st, i, now);
    return 0;
}

static void decay_line_fill(gcx_tech *t, gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now)
{
    decay_state *st = t->state;
    touch(st, (size_t)tc->id * st->lines + line, now);
}

/* The earliest decay cycle after `now` of a line that still holds data: a retry then may switch it
 * off. Decay cycles passed, and those of lines accessed since or already off, are dropped. */
static uint64_t decay_next_event(gcx_tech *t, uint64_t now)
{
    decay_state *st = t->state;
    if (st->oom) {
        t->gpu->oom = 1; /* the run stops with an out-of-memory error */
        return GCX_INF;
    }
    while (st->n_due) {
        decay_due_at d = st->due[0];
        if (d.cycle > now && st->live[d.line] && st->touched[d.line] + st->interval == d.cycle)
            return d.cycle;
        due_pop(st);
    }
    return GCX_INF;
}

/* A host copy (l2.prefill) wrote a line that still holds data: an access like any other. A line an
 * earlier copy before the same kernel installed is not live yet: kernel_start powers it on. */
static void decay_line_prefill(gcx_tech *t, gcx_tcache *tc, uint32_t line, uint64_t now)
{
    decay_state *st = t->state;
    size_t i = (size_t)tc->id * st->lines + line;
    if (st->live[i])
        touch(st, i, now);
}

static void decay_line_evict(gcx_tech *t, gcx_tcache *tc, uint32_t line, uint64_t now)
{
    decay_state *st = t->state;
    st->live[(size_t)tc->id * st->lines + line] = 0;
    gcx_tcache_set_state(tc, line, GCX_LINE_OFF, now);
}

static void decay_cache_finish(gcx_tech *t, gcx_tcache *tc, uint64_t now)
{
    decay_state *st = t->state;
    for (uint32_t line = 0; line < st->lines; line++) {
        size_t i = (size_t)tc->id * st->lines + line;
        if (st->live[i] && st->touched[i] + st->interval <= now && tc->c.meta[line].state == GCX_LINE_ON) {
            uint64_t lost = st->touched[i] + st->interval;
            gcx_tcache_set_state(tc, line, GCX_LINE_OFF, lost);
            st->decays++;
            st->decays_dirty += tc->c.meta[line].dirty != 0;
            /* As if a lookup had found it: the data is gone from the decay cycle, so the line's
             * residency ends there (not at the end of the run); its writeback is not simulated. */
            gcx_tcache_note_drop(tc, line, lost);
            gcx_cache_invalidate(&tc->c, line, NULL, NULL);
            tc->word_valid[line] = tc->word_dirty[line] = 0;
            st->live[i] = 0;
        }
    }
}

static void decay_report(gcx_tech *t, gcx_stat_sink *sink)
{
    decay_state *st = t->state;
    const char *level = t->ops->kind == GCX_TECH_L1D_POWER ? "l1d" : "l2";
    char name[64];
    snprintf(name, sizeof name, "%s_decay_lines", level);
    sink->put(sink, name, (double)st->decays);
    snprintf(name, sizeof name, "%s_decay_dirty_lines", level);
    sink->put(sink, name, (double)st->decays_dirty);
}

const gcx_technique gcx_tech_l1d_power_decay = {
    .name = "decay",
    .doc = "cache decay: an L1D line idle for decay.interval cycles is switched off, its data lost (Kaxiras et al.)",
    .kind = GCX_TECH_L1D_POWER,
    .params = decay_params,
    .n_params = N_PARAMS,
    .init = decay_init,
    .release = decay_release,
    .set_lookup = decay_set_lookup,
    .line_live = decay_line_live,
    .line_access = decay_line_access,
    .line_fill = decay_line_fill,
    .line_evict = decay_line_evict,
    .next_event = decay_next_event,
    .cache_finish = decay_cache_finish,
    .report = decay_report,
};

const gcx_technique gcx_tech_l2_power_decay = {
    .name = "decay",
    .doc = "cache decay: an L2 line idle for decay.interval cycles is switched off, its data lost (Kaxiras et al.)",
    .kind = GCX_TECH_L2_POWER,
    .params = decay_params,
    .n_params = N_PARAMS,
    .init = decay_init,
    .release = decay_release,
    .kernel_start = decay_kernel_start,
    .set_lookup = decay_set_lookup,
    .line_live = decay_line_live,
    .line_access = decay_line_access,
    .line_fill = decay_line_fill,
    .line_prefill = decay_line_prefill,
    .line_evict = decay_line_evict,
    .next_event = decay_next_event,
    .cache_finish = decay_cache_finish,
    .report = decay_report,
};

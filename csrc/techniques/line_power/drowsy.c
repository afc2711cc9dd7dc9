/* Drowsy cache lines (Atoofian and Manzak; Flautner et al.) for the L1Ds and the L2: a line's data
 * array drops to a low retention voltage when idle and is raised again on its next access.
 *
 * Semantics (both caches, one set of parameters):
 * - every line starts DROWSY; a line with no data (never filled, evicted, invalidated) is DROWSY;
 * - an access at cycle t to a DROWSY line raises it: ON from t, the data readable at
 *   t + drowsy.wakeup_cycles, and the access waits that long unless drowsy.hide_wakeup (the
 *   scheduler woke the line ahead of time: same energy and ON time, no wait); a second access
 *   while the line is still waking waits for the rest;
 * - an access ends one cycle after its data is readable; per-line policy (drowsy.period = 0): the
 *   line goes DROWSY drowsy.window cycles after the end of its last access (window 0: right after
 *   each access, the paper's policy); periodic policy (drowsy.period = P > 0, Flautner's "simple"
 *   policy): every line goes DROWSY at cycles P, 2P, 3P, ... and an access keeps it ON only until
 *   the next such cycle;
 * - a fill raises a DROWSY line too (counted as a wake-up, no wait: it overlaps the miss);
 * - tags never sleep (the voltage check runs alongside the tag compare).
 * Everything is lazy: a line's pending transition to DROWSY is kept as a cycle and written into the
 * line-state layer, in the past, at the line's next event (access, fill, eviction, end of run). */
#include <stdio.h>
#include <stdlib.h>

#include "sim/gpu.h"

enum { P_WINDOW, P_WAKEUP, P_HIDE, P_VDD, P_PERIOD, N_PARAMS };

static const gcx_param_spec drowsy_params[N_PARAMS] = {
    [P_WINDOW] = {"drowsy.window",
                  "cycles a line stays ON after an access ends before it goes drowsy (0: right after each access, "
                  "as in Atoofian and Manzak); per-line policy only (drowsy.period = 0)",
                  0, 0, 1e12, 1},
    [P_WAKEUP] = {"drowsy.wakeup_cycles", "cycles an access to a drowsy line waits while its Vdd is raised", 1, 0,
                  1000, 1},
    [P_HIDE] = {"drowsy.hide_wakeup",
                "the scheduler wakes lines ahead of the access, so no access waits (the wake-up energy and ON "
                "time are still spent)",
                0, 0, 1, 2},
    [P_VDD] = {"drowsy.vdd",
               "drowsy supply voltage in volts; selects the drowsy leakage (Atoofian and Manzak, Table 3) in the "
               "energy model",
               0.4, 0.2, 0.9, 0},
    [P_PERIOD] = {"drowsy.period",
                  "0: per-line policy (drowsy.window); P > 0: Flautner's simple policy, every line goes drowsy "
                  "at each multiple of P cycles",
                  0, 0, 1e12, 1},
};

typedef struct drowsy_state {
    uint32_t lines;      /* lines per cache instance */
    uint32_t n_caches;   /* SMs (L1D) or partitions (L2) */
    uint64_t window, wakeup, period;
    int hide;
    uint64_t *sleep_at;  /* [cache * lines + line] cycle an ON line goes drowsy unless accessed; GCX_INF: none */
    uint64_t *ready_at;  /* cycle a woken line's data can be read */
    uint8_t *asleep;     /* the line-state layer has the line DROWSY (set by this technique) */
    uint64_t access_wakeups, fill_wakeups, wait_cycles;
} drowsy_state;

static int drowsy_check(const double *p, gcx_error *err)
{
    if (p[P_PERIOD] > 0 && p[P_WINDOW] > 0)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "drowsy.window (%s) and drowsy.period (%s) select different policies: set drowsy.window "
                        "to 0 for the periodic policy, or drowsy.period to 0 for the per-line one",
                        gcx_num(p[P_WINDOW]).s, gcx_num(p[P_PERIOD]).s);
    return GCX_OK;
}

static gcx_tcache *cache_of(gcx_tech *t, uint32_t i)
{
    gcx_gpu *g = t->gpu;
    return t->ops->kind == GCX_TECH_L1D_POWER ? &g->sms[i].l1.tc : &g->l2[i].tc;
}

static void set_drowsy(drowsy_state *st, gcx_tcache *tc, uint32_t line, uint64_t when)
{
    gcx_tcache_set_state(tc, line, GCX_LINE_DROWSY, when);
    st->asleep[(size_t)tc->id * st->lines + line] = 1;
}

static int drowsy_init(gcx_tech *t, gcx_error *err)
{
    gcx_gpu *g = t->gpu;
    drowsy_state *st = calloc(1, sizeof *st);
    if (!st)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the drowsy technique");
    t->state = st;
    st->n_caches = (uint32_t)(t->ops->kind == GCX_TECH_L1D_POWER ? g->cfg.sms : g->cfg.l2_partitions);
    st->lines = cache_of(t, 0)->c.n_lines;
    st->window = (uint64_t)t->params[P_WINDOW];
    st->wakeup = (uint64_t)t->params[P_WAKEUP];
    st->hide = t->params[P_HIDE] != 0;
    st->period = (uint64_t)t->params[P_PERIOD];
    size_t n = (size_t)st->n_caches * st->lines;
    st->sleep_at = malloc(n * sizeof *st->sleep_at);
    st->ready_at = calloc(n, sizeof *st->ready_at);
    st->asleep = calloc(n, 1);
    if (!st->sleep_at || !st->ready_at || !st->asleep)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the drowsy state of %zu lines", n);
    for (size_t i = 0; i < n; i++)
        st->sleep_at[i] = GCX_INF;
    /* Empty lines hold nothing to protect: drowsy from the start (a line another technique
     * already switched off stays off). */
    for (uint32_t c = 0; c < st->n_caches; c++) {
        gcx_tcache *tc = cache_of(t, c);
        for (uint32_t line = 0; line < st->lines; line++)
            if (tc->c.meta[line].state == GCX_LINE_ON)
                set_drowsy(st, tc, line, 0);
    }
    return GCX_OK;
}

static void drowsy_release(gcx_tech *t)
{
    drowsy_state *st = t->state;
    if (!st)
        return;
    free(st->sleep_at);
    free(st->ready_at);
    free(st->asleep);
    free(st);
    t->state = NULL;
}

/* When a line whose access ends at `end` (the first cycle after it) goes drowsy. */
static inline uint64_t sleep_time(const drowsy_state *st, uint64_t end)
{
    if (st->period)
        return (end + st->period - 1) / st->period * st->period;
    return end + st->window;
}

/* Write a pending transition to DROWSY that is due by `now` into the line-state layer. */
static void settle(drowsy_state *st, gcx_tcache *tc, uint32_t line, uint64_t now)
{
    size_t i = (size_t)tc->id * st->lines + line;
    if (st->sleep_at[i] > now)
        return;
    if (tc->c.meta[line].state == GCX_LINE_ON)
        set_drowsy(st, tc, line, st->sleep_at[i]);
    st->sleep_at[i] = GCX_INF;
}

static uint32_t drowsy_line_access(gcx_tech *t, gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now)
{
    drowsy_state *st = t->state;
    size_t i = (size_t)tc->id * st->lines + line;
    settle(st, tc, line, now);
    uint8_t state = tc->c.meta[line].state;
    if (state == GCX_LINE_OFF)
        return 0; /* switched off by another technique: not this technique's line */
    if (state == GCX_LINE_DROWSY) {
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
        st->asleep[i] = 0;
        st->ready_at[i] = now + st->wakeup;
        tc->s.wakeups++;
        st->access_wakeups++;
    }
    uint64_t ready = st->ready_at[i] > now ? st->ready_at[i] : now;
    st->sleep_at[i] = sleep_time(st, ready + 1);
    if (st->hide)
        return 0;
    uint32_t wait = (uint32_t)(ready - now);
    if (r->type == GCX_REQ_READ || r->type == GCX_REQ_ATOMIC)
        st->wait_cycles += wait; /* stores do not wait for the data array */
    return wait;
}

static void drowsy_line_fill(gcx_tech *t, gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now)
{
    drowsy_state *st = t->state;
    size_t i = (size_t)tc->id * st->lines + line;
    /* The cache has just set the line ON. It was drowsy if this technique had put it to sleep, or if
     * a pending transition fell before now (then the sleep is written in first). */
    int woke = st->asleep[i];
    if (!woke && st->sleep_at[i] <= now) {
        set_drowsy(st, tc, line, st->sleep_at[i]);
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
        woke = 1;
    }
    if (woke) {
        tc->s.wakeups++;
        st->fill_wakeups++;
    }
    st->asleep[i] = 0;
    if (st->ready_at[i] < now)
        st->ready_at[i] = now;
    st->sleep_at[i] = sleep_time(st, st->ready_at[i] + 1);
}

static void drowsy_line_evict(gcx_tech *t, gcx_tcache *tc, uint32_t line, uint64_t now)
{
    drowsy_state *st = t->state;
    size_t i = (size_t)tc->id * st->lines + line;
    settle(st, tc, line, now);
    if (tc->c.meta[line].state == GCX_LINE_ON)
        set_drowsy(st, tc, line, now); /* nothing left to keep at full Vdd */
    st->sleep_at[i] = GCX_INF;
    st->ready_at[i] = 0; /* a wake-up in progress ends with the data it was for */
}

static void drowsy_cache_finish(gcx_tech *t, gcx_tcache *tc, uint64_t now)
{
    drowsy_state *st = t->state;
    for (uint32_t line = 0; line < st->lines; line++)
        settle(st, tc, line, now);
}

static void drowsy_report(gcx_tech *t, gcx_stat_sink *sink)
{
    drowsy_state *st = t->state;
    const char *level = t->ops->kind == GCX_TECH_L1D_POWER ? "l1d" : "l2";
    char name[64];
    snprintf(name, sizeof name, "%s_drowsy_access_wakeups", level);
    sink->put(sink, name, (double)st->access_wakeups);
    snprintf(name, sizeof name, "%s_drowsy_fill_wakeups", level);
    sink->put(sink, name, (double)st->fill_wakeups);
    snprintf(name, sizeof name, "%s_drowsy_wait_cycles", level);
    sink->put(sink, name, (double)st->wait_cycles);
}

const gcx_technique gcx_tech_l1d_power_drowsy = {
    .name = "drowsy",
    .doc = "drowsy lines: idle L1D lines drop to a retention voltage and wake on access (Atoofian and Manzak)",
    .kind = GCX_TECH_L1D_POWER,
    .params = drowsy_params,
    .n_params = N_PARAMS,
    .check = drowsy_check,
    .init = drowsy_init,
    .release = drowsy_release,
    .line_access = drowsy_line_access,
    .line_fill = drowsy_line_fill,
    .line_evict = drowsy_line_evict,
    .cache_finish = drowsy_cache_finish,
    .report = drowsy_report,
};

const gcx_technique gcx_tech_l2_power_drowsy = {
    .name = "drowsy",
    .doc = "drowsy lines: idle L2 lines drop to a retention voltage and wake on access (Atoofian and Manzak)",
    .kind = GCX_TECH_L2_POWER,
    .params = drowsy_params,
    .n_params = N_PARAMS,
    .check = drowsy_check,
    .init = drowsy_init,
    .release = drowsy_release,
    .line_access = drowsy_line_access,
    .line_fill = drowsy_line_fill,
    .line_evict = drowsy_line_evict,
    .cache_finish = drowsy_cache_finish,
    .report = drowsy_report,
};

/* AdmL1D (Do, Kim, Kim): switch the L1D off for applications it slows down. During a warm-up
 * period the L1D's reservation fails (every failed attempt) and accepted accesses are counted; at
 * its end R-to-A = fails / accesses is compared with the B-threshold and, above it, the L1D is
 * switched off for the rest of the run: dirty lines are written back, every line is gated, and
 * every request bypasses it. The decision is taken for all SMs together (scope global, the
 * paper's) or for each SM from its own counters (scope per_sm).
 *
 * Timing: the warm-up is the first `warmup_cycles` cycles of the run, [0, W). Attempts counted at
 * cycles before W are the warm-up's; the decision is taken at the start of cycle W, before any
 * component acts in it, so nothing of cycle W or later uses an L1D that is switched off. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/gpu.h"

enum { SCOPE_GLOBAL = 0, SCOPE_PER_SM = 1 };

static const gcx_param_spec adm_params[] = {
    {"l1d.admL1D.warmup_cycles", "cycles from the start of the run during which reservation fails and L1D "
                                 "accesses are counted; the decision is taken at its end",
     10000, 1, 1e12, 1},
    {"l1d.admL1D.b_threshold", "the L1D is switched off when R-to-A (fails / accesses over the warm-up) exceeds this",
     3, 0, 1e9, 0},
    {"l1d.admL1D.scope", "global: one decision for every SM from the sums of their counters (the paper); per_sm: "
                         "each SM decides from its own counters",
     SCOPE_GLOBAL, 0, 1, 1},
};
static const char *const adm_param_choices[] = {NULL, NULL, "global,per_sm"};

typedef struct adm_sm {
    uint64_t fails, accesses; /* counted during the warm-up */
    int off;
} adm_sm;

typedef struct adm_state {
    uint64_t warmup;
    double threshold;
    int scope;
    int decided;
    uint64_t decision_cycle;
    uint32_t n_sms;
    adm_sm sm[]; /* one per SM */
} adm_state;

static int adm_init(gcx_tech *t, gcx_error *err)
{
    uint32_t n = (uint32_t)t->gpu->cfg.sms;
    adm_state *s = calloc(1, sizeof *s + n * sizeof s->sm[0]);
    if (!s)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for AdmL1D's counters");
    s->warmup = (uint64_t)t->params[0];
    s->threshold = t->params[1];
    s->scope = (int)t->params[2];
    s->n_sms = n;
    t->state = s;
    return GCX_OK;
}

static void adm_release(gcx_tech *t)
{
    free(t->state);
    t->state = NULL;
}

static void adm_outcome(gcx_tech *t, uint32_t sm, int fail, uint64_t count, uint64_t now)
{
    adm_state *s = t->state;
    if (s->decided || now >= s->warmup)
        return;
    if (fail)
        s->sm[sm].fails += count;
    else
        s->sm[sm].accesses += count;
}

/* The comparator: R-to-A > B-threshold, without dividing (no accesses but some fails is above
 * any threshold; neither is below every threshold). */
static int above(uint64_t fails, uint64_t accesses, double threshold)
{
    return (double)fails > threshold * (double)accesses;
}

/* Switch one SM's L1D off at `now`: dirty lines are written back, every line is dropped and its
 * data array gated. Lines still being fetched are gated too: the switched-off L1D does not store
 * their data, which goes straight to the waiting requests (gcx_l1_reply). */
static void switch_off(gcx_gpu *g, gcx_sm *sm, uint64_t now)
{
    gcx_tcache *tc = &sm->l1.tc;
    sm->l1.off = 1;
    gcx_l1_flush(g, sm, now);
    for (uint32_t line = 0; line < tc->c.n_lines; line++)
        gcx_tcache_set_state(tc, line, GCX_LINE_OFF, now);
}

static void decide(gcx_tech *t, uint64_t now)
{
    adm_state *s = t->state;
    gcx_gpu *g = t->gpu;
    uint64_t fails = 0, accesses = 0;
    for (uint32_t i = 0; i < s->n_sms; i++) {
        fails += s->sm[i].fails;
        accesses += s->sm[i].accesses;
    }
    int all_off = above(fails, accesses, s->threshold);
    for (uint32_t i = 0; i < s->n_sms; i++) {
        int off = s->scope == SCOPE_GLOBAL ? all_off : above(s->sm[i].fails, s->sm[i].accesses, s->threshold);
        s->sm[i].off = off;
        if (off && !g->sms[i].l1.off)
            switch_off(g, &g->sms[i], now);
    }
    s->decided = 1;
    s->decision_cycle = now;
}

static void adm_cycle_start(gcx_tech *t, uint64_t now)
{
    adm_state *s = t->state;
    if (!s->decided && now >= s->warmup)
        decide(t, now);
}

static uint64_t adm_next_event(gcx_tech *t, uint64_t now)
{
    adm_state *s = t->state;
    return s->decided ? GCX_INF : s->warmup;
}

static double ratio(uint64_t fails, uint64_t accesses)
{
    if (accesses)
        return (double)fails / (double)accesses;
    return fails ? INFINITY : 0.0;
}

static void adm_report(gcx_tech *t, gcx_stat_sink *sink)
{
    adm_state *s = t->state;
    uint64_t fails = 0, accesses = 0;
    uint32_t n_off = 0;
    double lo = INFINITY, hi = 0.0;
    for (uint32_t i = 0; i < s->n_sms; i++) {
        fails += s->sm[i].fails;
        accesses += s->sm[i].accesses;
        n_off += (uint32_t)s->sm[i].off;
        double r = ratio(s->sm[i].fails, s->sm[i].accesses);
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
    }
    if (sink->put(sink, "admL1D_r_to_a", ratio(fails, accesses)) || sink->put(sink, "admL1D_warmup_fails", (double)fails) ||
        sink->put(sink, "admL1D_warmup_accesses", (double)accesses) ||
        sink->put(sink, "admL1D_decided", s->decided) ||
        sink->put(sink, "admL1D_decision_cycle", s->decided ? (double)s->decision_cycle : NAN) ||
        sink->put(sink, "admL1D_switched_off", s->n_sms ? (double)n_off / s->n_sms : 0.0) ||
        sink->put(sink, "admL1D_sms_off", n_off) || sink->put(sink, "admL1D_sm_r_to_a_min", s->n_sms ? lo : 0.0) ||
        sink->put(sink, "admL1D_sm_r_to_a_max", hi))
        return;
    char name[64];
    for (uint32_t i = 0; i < s->n_sms; i++) {
        snprintf(name, sizeof name, "admL1D_sm%u_r_to_a", i);
        if (sink->put(sink, name, ratio(s->sm[i].fails, s->sm[i].accesses)))
            return;
        snprintf(name, sizeof name, "admL1D_sm%u_off", i);
        if (sink->put(sink, name, s->sm[i].off))
            return;
    }
}

const gcx_technique gcx_tech_admission_admL1D = {
    .name = "admL1D",
    .doc = "AdmL1D: switch the L1D off when reservation fails per access over a warm-up exceed a threshold",
    .kind = GCX_TECH_L1D_ADMISSION,
    .params = adm_params,
    .n_params = (int)(sizeof adm_params / sizeof adm_params[0]),
    .param_choices = adm_param_choices,
    .init = adm_init,
    .release = adm_release,
    .l1_outcome = adm_outcome,
    .next_event = adm_next_event,
    .cycle_start = adm_cycle_start,
    .report = adm_report,
};

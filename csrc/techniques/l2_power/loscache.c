/* LoSCache (Tan et al.): power-gate each L2 line after the access its instruction's locality
 * predicts to be the data's last, using re-reference counts measured on a few predictor CTAs.
 *
 * Per kernel: one CTA per SM (a random one of its first resident CTAs, drawn from the GPU's seeded
 * generator) is the predictor; while the prediction phase lasts its warps issue first and the PCs
 * of its memory instructions enter the SM's prediction table with the first L2 block each touched.
 * The phase ends after `prediction_period` L2 accesses or when every predictor CTA has finished;
 * each table entry then reads the access counter of its block's L2 line as the predicted count p
 * of its PC (the read messages cross the crossbar both ways and occupy its ports; an SM uses its
 * table once its answers are back). With `phase_scope = per_sm` each SM's phase is its own: it
 * ends after `prediction_period` L2 accesses of that SM's requests or when its predictor finishes,
 * and only its table is updated then (the other SMs' predictors keep their priority). An L2 access
 * counts for the SM that sends it: with decoupled-sharing L1Ds, the home L1D of the line, which
 * fetches for every SM of its cluster (one fetch may serve several of them). Later requests carry p + threshold(PC) of their PC. The
 * 6-bit counter of an L2 line (reset on fill) counts its accesses; the access that brings it to
 * the request's p + threshold is the last: the line is powered off after it (dirty data written
 * back, tag kept); a p + threshold above 63 is never reached by the counter, so the line is not
 * gated. p + threshold = 1 means "do not allocate". A request that matches a kept tag
 * is an early gating: served as a miss, and in adaptive mode it raises its PC's threshold in its
 * SM's table (up to max_threshold). Every L2 line starts OFF and powers on at its first fill.
 *
 * Prediction accuracy (DESIGN.md section 4; the paper checks "for each data" whether the
 * predicted count equals the actual one): a prediction belongs to a stay of a block's data in the
 * L2, from its fill to its natural end (eviction, end of run, or a gating whose kept tag is never
 * matched again). An early gating does not end the stay: the refill it causes continues it, so its
 * actual count is every access it received, before and after the early gating. The stay's
 * prediction is the target (p + threshold) carried by its latest predicted access, the one in force
 * when the line was gated or the stay ended (a threshold raised during the stay changes the target
 * later accesses carry; the first access's target did not decide the gating); the prediction
 * is correct when the actual count equals it, an under-prediction when it is larger (a stay with
 * an early gating is one), an over-prediction when smaller (the line stayed on until evicted). Stays no
 * predicted request touched are not predictions. A bypass (prediction 1) is a prediction too. A
 * gated stay whose kept tag is overwritten, and a bypass, would be correct unless their block comes
 * back: a record as large as the L2 partition remembers them and counts an under-prediction if the
 * block misses in the L2 again while remembered (the record only measures, it decides nothing; the
 * hardware keeps no tag for them and cannot tell). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

#define LOS_COUNT_MAX 63 /* 6-bit saturating counters and predictions */
#define LOS_MSG_BYTES 8  /* a table-update request (block address) or answer (count): one header */
/* A request's target p + threshold goes up to LOS_COUNT_MAX + (LOS_COUNT_MAX - 1) (the largest
 * max_threshold): it must fit the line's uint8_t prediction uncapped. */
_Static_assert(LOS_COUNT_MAX + LOS_COUNT_MAX - 1 <= UINT8_MAX, "a request's target must fit los_line.pred");

enum { P_TABLE_ENTRIES, P_PERIOD, P_ADAPTIVE, P_MAX_THRESHOLD, P_PRIORITY, P_SCOPE };
enum { SCOPE_GLOBAL = 0, SCOPE_PER_SM = 1 };

static const gcx_param_spec los_params[] = {
    {"l2.loscache.table_entries", "prediction-table entries per SM (PCs it can hold)", 32, 1, 4096, 1},
    {"l2.loscache.prediction_period", "L2 accesses after which the prediction phase ends (if the predictor CTAs "
                                      "have not all finished before)", 100, 1, 1e12, 1},
    {"l2.loscache.adaptive", "raise a PC's threshold by one at each early gating (false: naive prediction)", 1, 0, 1,
     2},
    {"l2.loscache.max_threshold", "largest threshold a PC can reach in adaptive mode", 3, 0, LOS_COUNT_MAX - 1, 1},
    {"l2.loscache.predictor_priority", "predictor CTAs issue first during the prediction phase (false: an ablation "
                                       "without priority)", 1, 0, 1, 2},
    {"l2.loscache.phase_scope", "global: one prediction phase for the GPU, ended by the L2 accesses of all SMs or "
                                "when every predictor has finished (the paper, as read here); per_sm: each SM's "
                                "phase ends after the period's L2 accesses of its own requests or when its "
                                "predictor finishes",
     SCOPE_GLOBAL, 0, 1, 1},
};
static const char *const los_param_choices[] = {NULL, NULL, NULL, NULL, NULL, "global,per_sm"};

/* Predictor state of an SM in the current kernel. */
enum { PRED_NONE = 0, PRED_WAITING, PRED_RUNNING, PRED_DONE };
/* Why a prediction phase ended. */
enum { END_PERIOD = 0, END_PREDICTORS, END_KERNEL, N_END };

typedef struct los_entry {
    uint64_t block; /* L2 block address (line address) the PC first touched */
    uint32_t pc;
    uint8_t pred;   /* predicted count p; 0: no prediction */
    uint8_t thr;    /* threshold added to p */
} los_entry;

typedef struct los_sm {
    los_entry *table;
    uint32_t used;     /* entries filled */
    uint32_t pick;     /* the predictor is the pick-th CTA launched on this SM in the kernel */
    uint32_t launches; /* CTAs launched on this SM in the kernel */
    uint32_t slot;     /* CTA slot of the running predictor */
    uint8_t pstate;    /* PRED_* */
    uint8_t seen_other; /* a non-predictor request was made during the phase */
    uint8_t active;    /* this SM's prediction phase lasts */
    uint64_t accesses; /* L2 accesses of this SM's requests since the kernel started */
    uint64_t ready;    /* cycle from which the table's predictions are usable */
} los_sm;

/* Per-L2-line state: the access counter of the design plus what the accuracy measurement needs. */
enum {
    LF_DATA = 1,  /* the line holds data */
    LF_GATE = 2,  /* its count reached a request's target while a fill is still being delivered */
    LF_GATED = 4, /* gated by us, kept tag not matched yet: the stay may still continue */
    LF_CHAIN = 8, /* the kept tag was matched: the refill continues the same stay */
};
typedef struct los_line {
    uint64_t block;   /* the gated data's block, for the record once the kept tag is overwritten */
    uint32_t pending; /* accesses still to come in the fill being delivered (gating waits for them) */
    uint16_t acc;     /* accesses of the data's stay, early gatings included (measurement) */
    uint8_t cnt;      /* the design's counter: accesses since the fill (6-bit saturating) */
    uint8_t pred;     /* the stay's prediction (target of its latest predicted access, up to
                       * LOS_COUNT_MAX + max_threshold); 0: none */
    uint8_t flags;    /* LF_* */
} los_line;

#define LOS_COUNTERS(X)                                                                            \
    X(phases, "prediction phases (one per kernel)")                                                \
    X(phase_accesses, "L2 accesses during the prediction phases (until the last SM's ends)")       \
    X(phase_cycles, "cycles of the prediction phases (until the last SM's ends)")                  \
    X(phase_requests, "LD/ST requests created during the prediction phases")                       \
    X(phase_predictor_requests, "... of them by predictor CTAs")                                   \
    X(predictor_lead_requests, "predictor requests an SM created before its first other request in a phase") \
    X(predictor_ctas, "predictor CTAs that ran")                                                   \
    X(table_lookups, "prediction-table searches (one per LD/ST request)")                          \
    X(table_inserts, "PCs inserted into prediction tables")                                        \
    X(table_full, "predictor requests whose new PC found the table full")                          \
    X(table_updates, "table-update messages at phase ends (each a request and an answer)")         \
    X(update_flits, "crossbar flits of the table-update messages")                                 \
    X(predicted_pcs, "table entries that received a prediction")                                   \
    X(prediction_sum, "sum of the predictions table entries received")                             \
    X(threshold_sum, "sum of the thresholds of predicted entries at kernel ends")                  \
    X(predicted_requests, "LD/ST requests that carried a prediction")                              \
    X(predicted_l2_accesses, "L2 accesses that carried a prediction")                              \
    X(gatings, "lines powered off after their predicted last access")                              \
    X(early_gatings, "requests that matched the kept tag of a gated line")                         \
    X(threshold_raises, "thresholds raised by early gatings")                                      \
    X(correct, "stays of data whose accesses equalled the prediction")                             \
    X(under, "stays with more accesses than predicted")                                            \
    X(under_after_tag, "... of them found when the block came back after its kept tag was overwritten") \
    X(over, "stays with fewer accesses than predicted")                                            \
    X(unpredicted, "stays no predicted request touched")                                           \
    X(bypasses, "misses not allocated (prediction 1)")                                             \
    X(bypass_correct, "bypasses whose block did not come back")                                    \
    X(bypass_under, "bypasses whose block came back to the L2")

typedef struct los_counters {
#define GCX_X(name, doc) uint64_t name;
    LOS_COUNTERS(GCX_X)
#undef GCX_X
    uint64_t phase_end[N_END];
} los_counters;

typedef struct los_state {
    los_sm *sm;
    los_entry *entries;
    los_line *line;     /* [partitions * lines_per_part] */
    uint64_t *record;   /* [partitions * lines_per_part] block | REC_* of a pending-correct prediction, or GCX_TAG_NONE */
    uint32_t lines_per_part, n_sms, table_entries, max_thr;
    uint64_t period;
    int adaptive, priority, scope;
    uint32_t active;      /* SMs whose prediction phase in the running kernel lasts */
    uint64_t accesses;    /* L2 accesses since the kernel started */
    uint64_t phase_start;
    uint32_t waiting, running; /* SMs whose predictor has not started / is running */
    int gating;           /* a power-off of ours is dropping the data (not an eviction) */
    los_counters n;
} los_state;

static inline los_line *line_of(los_state *s, const gcx_tcache *c, uint32_t line)
{
    return &s->line[(size_t)c->id * s->lines_per_part + line];
}

static inline int has_data(const gcx_tcache *c, uint32_t line)
{
    return c->c.meta[line].valid || c->word_valid[line];
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void los_release(gcx_tech *t)
{
    los_state *s = t->state;
    if (!s)
        return;
    free(s->sm);
    free(s->entries);
    free(s->line);
    free(s->record);
    free(s);
    t->state = NULL;
}

static int los_init(gcx_tech *t, gcx_error *err)
{
    gcx_gpu *g = t->gpu;
    los_state *s = calloc(1, sizeof *s);
    if (!s)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for LoSCache");
    t->state = s;
    s->n_sms = (uint32_t)g->cfg.sms;
    s->table_entries = (uint32_t)t->params[P_TABLE_ENTRIES];
    s->period = (uint64_t)t->params[P_PERIOD];
    s->adaptive = t->params[P_ADAPTIVE] != 0;
    s->max_thr = (uint32_t)t->params[P_MAX_THRESHOLD];
    s->priority = t->params[P_PRIORITY] != 0;
    s->scope = (int)t->params[P_SCOPE];
    uint32_t parts = (uint32_t)g->cfg.l2_partitions;
    s->lines_per_part = g->l2[0].tc.c.n_lines;
    size_t lines = (size_t)parts * s->lines_per_part;
    s->sm = calloc(s->n_sms, sizeof *s->sm);
    s->entries = calloc((size_t)s->n_sms * s->table_entries, sizeof *s->entries);
    s->line = calloc(lines, sizeof *s->line);
    s->record = malloc(lines * sizeof *s->record);
    if (!s->sm || !s->entries || !s->line || !s->record) {
        los_release(t);
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for LoSCache state (%zu L2 lines)", lines);
    }
    for (size_t i = 0; i < lines; i++)
        s->record[i] = GCX_TAG_NONE;
    for (uint32_t i = 0; i < s->n_sms; i++) {
        s->sm[i].table = s->entries + (size_t)i * s->table_entries;
        s->sm[i].slot = GCX_NONE;
    }
    /* Every L2 line starts powered off; the fill path powers a line on when data arrives. */
    for (uint32_t p = 0; p < parts; p++) {
        gcx_tcache *tc = &g->l2[p].tc;
        for (uint32_t line = 0; line < tc->c.n_lines; line++)
            gcx_tcache_set_state(tc, line, GCX_LINE_OFF, 0);
    }
    return GCX_OK;
}

/* ---- accuracy bookkeeping ---------------------------------------------------------------------- */

/* A stay of data ended (eviction, end of run, or its kept tag is gone): compare its accesses
 * with its prediction. */
static void close_stay(los_state *s, los_line *L)
{
    if (L->flags & (LF_DATA | LF_GATED | LF_CHAIN)) {
        if (!L->pred)
            s->n.unpredicted++;
        else if (L->acc < L->pred)
            s->n.over++;
        else if (L->acc > L->pred)
            s->n.under++;
        else
            s->n.correct++;
    }
    L->cnt = L->pred = 0;
    L->acc = 0;
    L->flags = 0;
    L->pending = 0;
}

/* The record of predictions that are correct unless their block comes back: a direct-mapped table
 * per partition; an entry pushed out by another is settled as correct. */
#define REC_BYPASS (1ull << 63) /* a bypass (else a gated stay whose kept tag was overwritten) */

static inline uint64_t *record_slot(los_state *s, const gcx_tcache *c, uint64_t block)
{
    uint64_t h = block * 0x9E3779B97F4A7C15ull;
    return &s->record[(size_t)c->id * s->lines_per_part + (uint32_t)((h >> 32) % s->lines_per_part)];
}

static void record_settle(los_state *s, uint64_t entry, int came_back)
{
    if (entry == GCX_TAG_NONE)
        return;
    if (entry & REC_BYPASS) {
        if (came_back)
            s->n.bypass_under++;
        else
            s->n.bypass_correct++;
    } else if (came_back) {
        s->n.under++;
        s->n.under_after_tag++;
    } else {
        s->n.correct++;
    }
}

static void record_put(los_state *s, const gcx_tcache *c, uint64_t block, uint64_t kind)
{
    uint64_t *e = record_slot(s, c, block);
    record_settle(s, *e, 0);
    *e = block | kind;
}

/* A miss to `block`: if a pending prediction on it is remembered, it was an under-prediction. */
static void record_take(los_state *s, const gcx_tcache *c, uint64_t block)
{
    uint64_t *e = record_slot(s, c, block);
    if (*e != GCX_TAG_NONE && (*e & ~REC_BYPASS) == block) {
        record_settle(s, *e, 1);
        *e = GCX_TAG_NONE;
    }
}

/* The line's stay ends because its data or kept tag is replaced by another block: a gated stay
 * whose count matched its prediction goes to the record, anything else is settled now. */
static void end_stay(los_state *s, const gcx_tcache *c, los_line *L)
{
    if ((L->flags & LF_GATED) && L->pred && L->acc == L->pred) {
        record_put(s, c, L->block, 0);
        L->flags = 0;
    }
    close_stay(s, L);
}

/* ---- the prediction phase ---------------------------------------------------------------------- */

/* SM `i`'s phase ends (`why`: END_*; with the per-SM scope each SM's end counts as a phase end):
 * each entry of its table reads its block's counter; the update messages go through the crossbar
 * and the SM uses its table once the last answer is back. */
static void end_sm_phase(gcx_tech *t, uint32_t i, uint64_t now, int why)
{
    los_state *s = t->state;
    gcx_gpu *g = t->gpu;
    los_sm *m = &s->sm[i];
    if (s->scope == SCOPE_PER_SM)
        s->n.phase_end[why]++;
    m->active = 0;
    s->active--;
    m->ready = now;
    uint64_t flits0 = g->req_net.flits + g->reply_net.flits;
    for (uint32_t e = 0; e < m->used; e++) {
        los_entry *en = &m->table[e];
        uint64_t addr = en->block << g->l2_line_shift;
        uint32_t p = gcx_l2_partition_of(g, addr);
        gcx_tcache *tc = &g->l2[p].tc;
        uint32_t line = gcx_l2_find_line(g, p, addr);
        /* The block's line gives its count; no line (evicted, or gated with its count reset):
         * no prediction. The hardware counts an access when the tag array sees it; the model
         * counts it when its data is delivered, so a line still being fetched adds the
         * requests waiting in its MSHR entry. */
        if (line != GCX_NONE) {
            const los_line *L = line_of(s, tc, line);
            uint32_t cnt = L->flags & LF_DATA ? L->cnt : 0;
            if (tc->c.meta[line].reserved)
                cnt += g->l2[p].mshr.e[tc->mshr_of[line]].n_waiting;
            if (cnt > LOS_COUNT_MAX)
                cnt = LOS_COUNT_MAX;
            if (cnt) {
                en->pred = cnt;
                s->n.predicted_pcs++;
                s->n.prediction_sum += cnt;
            }
        }
        /* The update: the block address to the partition, the count back. Both messages are
         * sent now; the answer arrives a cycle after the request plus its own flight. */
        uint64_t at_l2 = gcx_xbar_charge(&g->req_net, i, p, LOS_MSG_BYTES, now);
        uint64_t back = gcx_xbar_charge(&g->reply_net, p, i, LOS_MSG_BYTES, now) - now;
        if (at_l2 + 1 + back > m->ready)
            m->ready = at_l2 + 1 + back;
        s->n.table_updates++;
    }
    s->n.update_flits += g->req_net.flits + g->reply_net.flits - flits0;
    gcx_sm_refresh_priorities(g, &g->sms[i]);
    if (s->active == 0) {
        s->n.phase_accesses += s->accesses;
        s->n.phase_cycles += now - s->phase_start;
    }
}

/* Every SM still in its phase ends it (the global scope's one phase end). */
static void end_phase(gcx_tech *t, uint64_t now, int why)
{
    los_state *s = t->state;
    if (s->scope == SCOPE_GLOBAL)
        s->n.phase_end[why]++;
    for (uint32_t i = 0; i < s->n_sms && s->active; i++)
        if (s->sm[i].active)
            end_sm_phase(t, i, now, why);
}

/* End the phase when no predictor is running or can still start (per-SM scope: end the phase of
 * each SM whose predictor has finished or will never start). */
static void check_predictors(gcx_tech *t, uint64_t now)
{
    los_state *s = t->state;
    gcx_gpu *g = t->gpu;
    if (!s->active)
        return;
    if (s->waiting && g->next_cta >= g->wl->kernels[g->kernel].n_ctas) {
        /* Every CTA has been dispatched: an SM still waiting for its pick will not get it. */
        for (uint32_t i = 0; i < s->n_sms; i++)
            if (s->sm[i].pstate == PRED_WAITING)
                s->sm[i].pstate = PRED_NONE;
        s->waiting = 0;
    }
    if (s->scope == SCOPE_PER_SM) {
        for (uint32_t i = 0; i < s->n_sms && s->active; i++) {
            const los_sm *m = &s->sm[i];
            if (m->active && (m->pstate == PRED_NONE || m->pstate == PRED_DONE))
                end_sm_phase(t, i, now, END_PREDICTORS);
        }
    } else if (s->waiting == 0 && s->running == 0) {
        end_phase(t, now, END_PREDICTORS);
    }
}

static void los_kernel_start(gcx_tech *t, uint32_t kernel, uint64_t now)
{
    los_state *s = t->state;
    gcx_gpu *g = t->gpu;
    /* Lines the L2 prefill (MemcpyHtoD) just filled: power them on, they open a residency. A line
     * gated with its tag kept may have been refilled with its own block: the host rewrote the
     * data, so the gated stay ends here and its block did not come back (nothing to remember). */
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++) {
        gcx_tcache *tc = &g->l2[p].tc;
        for (uint32_t line = 0; line < tc->c.n_lines; line++) {
            if (!has_data(tc, line) || tc->c.meta[line].fill_cycle != now)
                continue;
            los_line *L = line_of(s, tc, line);
            if ((L->flags & LF_GATED) && L->block == tc->c.tag[line])
                close_stay(s, L);
            else
                end_stay(s, tc, L);
            L->flags = LF_DATA;
            gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
        }
    }
    /* A fresh table per kernel; one predictor per SM among the CTAs of its first wave (round-robin
     * dispatch gives SM i the CTAs i, i + sms, ... up to the resident limit). */
    const gcx_kernel *k = &g->wl->kernels[kernel];
    uint32_t n = k->n_ctas, limit = g->cta_limit;
    s->waiting = s->running = 0;
    for (uint32_t i = 0; i < s->n_sms; i++) {
        los_sm *m = &s->sm[i];
        m->used = 0;
        m->launches = 0;
        m->slot = GCX_NONE;
        m->seen_other = 0;
        m->active = 1;
        m->accesses = 0;
        m->ready = GCX_INF;
        uint32_t first_wave = i < n ? (n - i + s->n_sms - 1) / s->n_sms : 0;
        if (first_wave > limit)
            first_wave = limit;
        m->pstate = first_wave ? PRED_WAITING : PRED_NONE;
        m->pick = first_wave ? gcx_rng_below(&g->rng, first_wave) : 0;
        s->waiting += first_wave != 0;
    }
    s->active = s->n_sms;
    s->accesses = 0;
    s->phase_start = now;
    s->n.phases++;
    check_predictors(t, now);
}

static void los_kernel_end(gcx_tech *t, uint32_t kernel, uint64_t now)
{
    los_state *s = t->state;
    if (s->active)
        end_phase(t, now, END_KERNEL);
    for (uint32_t i = 0; i < s->n_sms; i++)
        for (uint32_t e = 0; e < s->sm[i].used; e++)
            if (s->sm[i].table[e].pred)
                s->n.threshold_sum += s->sm[i].table[e].thr;
}

static void los_cta_start(gcx_tech *t, uint32_t sm, uint32_t slot, uint32_t cta_id, uint64_t now)
{
    los_state *s = t->state;
    los_sm *m = &s->sm[sm];
    if (m->active && m->pstate == PRED_WAITING && m->launches == m->pick) {
        m->pstate = PRED_RUNNING;
        m->slot = slot;
        s->waiting--;
        s->running++;
        s->n.predictor_ctas++;
    }
    m->launches++;
    check_predictors(t, now);
}

static void los_cta_end(gcx_tech *t, uint32_t sm, uint32_t slot, uint64_t now)
{
    los_state *s = t->state;
    los_sm *m = &s->sm[sm];
    if (m->pstate == PRED_RUNNING && m->slot == slot) {
        m->pstate = PRED_DONE;
        m->slot = GCX_NONE;
        s->running--;
    }
    check_predictors(t, now);
}

static int los_warp_priority(gcx_tech *t, uint32_t sm, uint32_t slot)
{
    los_state *s = t->state;
    const los_sm *m = &s->sm[sm];
    return m->active && s->priority && m->pstate == PRED_RUNNING && m->slot == slot;
}

static void los_ldst_request(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now)
{
    los_state *s = t->state;
    los_sm *m = &s->sm[sm];
    s->n.table_lookups++;
    uint32_t e = 0;
    while (e < m->used && m->table[e].pc != r->pc)
        e++;
    if (m->active) {
        s->n.phase_requests++;
        if (m->pstate != PRED_RUNNING || r->cta_slot != m->slot) {
            m->seen_other = 1;
            return;
        }
        s->n.phase_predictor_requests++;
        s->n.predictor_lead_requests += !m->seen_other;
        r->flags |= GCX_RF_PREDICTOR;
        if (e < m->used)
            return; /* the PC is already in the table */
        if (m->used == s->table_entries) {
            s->n.table_full++;
            return;
        }
        m->table[m->used++] = (los_entry){.block = r->addr >> t->gpu->l2_line_shift, .pc = r->pc};
        s->n.table_inserts++;
        return;
    }
    if (e == m->used || now < m->ready)
        return;
    /* The entry, as an index into every SM's tables together: the L2 request that carries the
     * prediction may be sent by another SM (a decoupled-sharing home L1D fetches for the SMs of its
     * cluster), and an early gating must raise the threshold in the table that made the prediction.
     * At most 1024 SMs (core.sms) x 4096 entries: it fits the int32_t. */
    r->tech[1] = (int32_t)((size_t)sm * s->table_entries + e);
    if (m->table[e].pred) {
        /* Not capped at the counter's maximum: a target above 63 (p saturated at 63, or close to it,
         * plus a raised threshold) is never reached by the 6-bit saturating counter, so the line is
         * not gated. Capped, raising the threshold of such a PC would change nothing and its lines
         * would be gated early at every stay. */
        r->tech[0] = (int32_t)((uint32_t)m->table[e].pred + m->table[e].thr);
        s->n.predicted_requests++;
    }
}

/* ---- the L2 side ------------------------------------------------------------------------------- */

static void los_l2_request(gcx_tech *t, gcx_tcache *c, uint32_t sm, uint64_t now)
{
    los_state *s = t->state;
    s->accesses++;
    if (!s->active)
        return;
    if (s->scope == SCOPE_GLOBAL) {
        if (s->accesses >= s->period)
            end_phase(t, now, END_PERIOD);
    } else if (sm < s->n_sms && s->sm[sm].active && ++s->sm[sm].accesses >= s->period) {
        end_sm_phase(t, sm, now, END_PERIOD);
    }
}

/* New data arrives in the line (its first fill, or a store into it while it is fetched): the counter
 * restarts; a refill after an early gating continues the stay, anything else begins a new one. */
static void start_stay(los_state *s, const gcx_tcache *c, los_line *L)
{
    if (L->flags & LF_CHAIN) {
        L->cnt = 0;
        L->flags = LF_DATA;
    } else if (!(L->flags & LF_DATA)) {
        end_stay(s, c, L);
        L->flags = LF_DATA;
    }
}

static uint32_t los_line_access(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now)
{
    los_state *s = t->state;
    los_line *L = line_of(s, c, line);
    if (c->c.meta[line].reserved)
        start_stay(s, c, L); /* a store into a line being fetched counts from the reset on */
    if (L->cnt < LOS_COUNT_MAX)
        L->cnt++;
    if (L->acc < UINT16_MAX)
        L->acc++;
    if (r->tech[0] > 0) {
        s->n.predicted_l2_accesses++;
        /* The latest target is the one the gating (or its absence) follows: the stay is judged
         * against it. */
        L->pred = (uint8_t)r->tech[0];
    }
    return 0; /* a line is powered on while its data is fetched: no wake-up latency */
}

/* Power the line off with its tag kept, if it can be now: a line whose sectors are still being
 * fetched (a sectored L2) keeps LF_GATE and is gated by the fill that completes it. */
static void gate(gcx_tech *t, gcx_tcache *c, uint32_t line, los_line *L, uint64_t now)
{
    los_state *s = t->state;
    uint64_t block = c->c.tag[line];
    s->gating = 1;
    int gated = gcx_l2_power_off(t->gpu, c, line, now, now, 1);
    s->gating = 0;
    if (!gated)
        return;
    L->block = block;
    L->cnt = 0; /* reset with the data; the stay's count and prediction wait for a kept-tag match */
    L->flags = LF_GATED;
    L->pending = 0;
    s->n.gatings++;
}

static void los_line_after_access(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now)
{
    los_line *L = line_of(t->state, c, line);
    if (r->tech[0] > 0 && L->cnt >= (uint32_t)r->tech[0])
        L->flags |= LF_GATE;
    /* The requests merged into a fill are all served by it: gate after the last of them. */
    if (L->pending && --L->pending)
        return;
    if (L->flags & LF_GATE)
        gate(t, c, line, L, now);
}

/* A fill of the line (a sectored line may take several), answering requests `r` (a list). */
static void los_line_fill(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now)
{
    los_state *s = t->state;
    los_line *L = line_of(s, c, line);
    start_stay(s, c, L); /* a later fill of a present line continues its stay */
    uint32_t n = 0;
    for (const gcx_req *w = r; w; w = w->next)
        n++;
    L->pending = n;
    if (n == 0 && (L->flags & LF_GATE))
        gate(t, c, line, L, now); /* the completing fill answers nobody: the count was reached before */
}

static void los_line_evict(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now)
{
    los_state *s = t->state;
    if (!s->gating)
        close_stay(s, line_of(s, c, line));
}

/* Another block takes the line of a gated stay (tag only): the stay ends now, before the new
 * block's fill, so that the gated block missing again meanwhile finds it in the record. */
static void los_line_tag_replace(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now)
{
    los_state *s = t->state;
    end_stay(s, c, line_of(s, c, line));
}

/* A request matched the kept tag of a gated line: an early gating. `refill`: the line is filled
 * again for it (its access is counted then); else it bypasses and the tag stays. */
static void early_gating(los_state *s, los_line *L, const gcx_req *r, int refill)
{
    s->n.early_gatings++;
    if (refill) {
        L->flags = (uint8_t)((L->flags & ~LF_GATED) | LF_CHAIN);
    } else if (L->acc < UINT16_MAX) {
        L->acc++;
    }
    if (!s->adaptive || r->tech[1] < 0)
        return;
    /* The answer tells the SM whose table gave the request its prediction (the request's r->sm may
     * be another: a decoupled home L1D's fetch), which raises the threshold of the request's PC. */
    uint32_t owner = (uint32_t)r->tech[1] / s->table_entries, idx = (uint32_t)r->tech[1] % s->table_entries;
    if (owner >= s->n_sms)
        return;
    los_sm *m = &s->sm[owner];
    los_entry *e = idx < m->used ? &m->table[idx] : NULL;
    if (e && e->pc == r->pc && e->thr < s->max_thr) {
        e->thr++;
        s->n.threshold_raises++;
    }
}

static void los_line_off_hit(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now)
{
    los_state *s = t->state;
    early_gating(s, line_of(s, c, line), r, 1);
}

static int los_allocate(gcx_tech *t, gcx_tcache *c, const gcx_req *r, uint64_t now)
{
    los_state *s = t->state;
    uint64_t block = r->addr >> c->c.line_shift;
    record_take(s, c, block);
    if (r->tech[0] != 1)
        return 1;
    s->n.predicted_l2_accesses++;
    /* A bypass that matches a kept tag is an early gating too (the model calls line_off_hit only
     * for requests that allocate). */
    uint32_t line = gcx_l2_find_line(t->gpu, c->id, r->addr);
    if (line != GCX_NONE && (line_of(s, c, line)->flags & LF_GATED) && !c->c.meta[line].reserved)
        early_gating(s, line_of(s, c, line), r, 0);
    else
        record_put(s, c, block, REC_BYPASS);
    s->n.bypasses++;
    return 0;
}

static void los_cache_finish(gcx_tech *t, gcx_tcache *c, uint64_t now)
{
    los_state *s = t->state;
    for (uint32_t line = 0; line < c->c.n_lines; line++)
        close_stay(s, line_of(s, c, line));
    uint64_t *rec = s->record + (size_t)c->id * s->lines_per_part;
    for (uint32_t i = 0; i < s->lines_per_part; i++) {
        record_settle(s, rec[i], 0);
        rec[i] = GCX_TAG_NONE;
    }
}

static void los_report(gcx_tech *t, gcx_stat_sink *sink)
{
    los_state *s = t->state;
    const los_counters *n = &s->n;
#define GCX_X(name, doc) sink->put(sink, "loscache_" #name, (double)n->name);
    LOS_COUNTERS(GCX_X)
#undef GCX_X
    sink->put(sink, "loscache_phase_ends_period", (double)n->phase_end[END_PERIOD]);
    sink->put(sink, "loscache_phase_ends_predictors", (double)n->phase_end[END_PREDICTORS]);
    sink->put(sink, "loscache_phase_ends_kernel", (double)n->phase_end[END_KERNEL]);
    uint64_t correct = n->correct + n->bypass_correct, under = n->under + n->bypass_under, over = n->over;
    uint64_t total = correct + under + over;
    sink->put(sink, "l2_predictions", (double)total);
    sink->put(sink, "l2_correct_predictions", (double)correct);
    sink->put(sink, "l2_under_predictions", (double)under);
    sink->put(sink, "l2_over_predictions", (double)over);
    /* NaN without a prediction: an accuracy over nothing is undefined, and 0 would read as measured. */
    sink->put(sink, "l2_prediction_accuracy", total ? (double)correct / (double)total : NAN);
    sink->put(sink, "l2_early_gatings", (double)n->early_gatings);
    sink->put(sink, "l2_gatings", (double)n->gatings);
}

const gcx_technique gcx_tech_l2_power_loscache = {
    .name = "loscache",
    .doc = "LoSCache: PC-indexed re-reference counts from predictor CTAs; L2 lines powered off after their "
           "predicted last access",
    .kind = GCX_TECH_L2_POWER,
    .params = los_params,
    .n_params = sizeof los_params / sizeof *los_params,
    .param_choices = los_param_choices,
    .init = los_init,
    .release = los_release,
    .kernel_start = los_kernel_start,
    .kernel_end = los_kernel_end,
    .cta_start = los_cta_start,
    .cta_end = los_cta_end,
    .warp_priority = los_warp_priority,
    .ldst_request = los_ldst_request,
    .line_access = los_line_access,
    .line_after_access = los_line_after_access,
    .allocate = los_allocate,
    .line_fill = los_line_fill,
    .line_evict = los_line_evict,
    .line_tag_replace = los_line_tag_replace,
    .line_off_hit = los_line_off_hit,
    .l2_request = los_l2_request,
    .cache_finish = los_cache_finish,
    .report = los_report,
};

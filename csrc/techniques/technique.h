/* The interface every power, admission and sharing technique implements: a table of optional
 * hooks the timing model calls at fixed points, plus the technique's own parameters and counters.
 * The model never asks which technique is configured; it calls the hooks that are not NULL.
 *
 * Lifecycle: init (after the GPU is built) -> kernel_start -> ... hooks ... -> finish (at the last
 * cycle: close residencies, compute metrics) -> report (counters out) -> release.
 *
 * A technique has a kind, which is the configuration key that selects it:
 *   l1d.admission  whether requests use the L1D at all (always, off, admL1D)
 *   l1d.power      line power states of the L1Ds (none, drowsy, ...)
 *   l2.power       line power states of the L2 (none, drowsy, loscache, ideal_gating, ...)
 *   l1d.sharing    how the SMs of a cluster share their L1Ds (private, remote, decoupled, ata)
 * One technique of each kind is active in a run, so techniques compose. */
#ifndef GCX_TECHNIQUE_H
#define GCX_TECHNIQUE_H

#include "cache/cache.h"
#include "gcx.h"

enum gcx_tech_kind {
    GCX_TECH_L1D_ADMISSION = 0,
    GCX_TECH_L1D_POWER = 1,
    GCX_TECH_L2_POWER = 2,
    GCX_TECH_L1D_SHARING = 3,
    GCX_N_TECH_KINDS = 4,
};

typedef struct gcx_gpu gcx_gpu;
typedef struct gcx_req gcx_req;
typedef struct gcx_tcache gcx_tcache;
typedef struct gcx_tech gcx_tech;

/* Where techniques send their counters: put(sink, "metric_name", value). */
typedef struct gcx_stat_sink {
    void *opaque;
    int (*put)(struct gcx_stat_sink *sink, const char *name, double value);
} gcx_stat_sink;

typedef struct gcx_technique {
    const char *name;
    const char *doc;
    int kind; /* enum gcx_tech_kind */
    const gcx_param_spec *params; /* full dotted names, e.g. "l2.loscache.table_entries" */
    int n_params;
    /* Parameters that take a name: NULL (all numeric), or one entry per parameter, in the order
     * of `params`, holding its comma-separated names ("global,per_sm") or NULL for a number. A
     * named parameter's value is the index of its name: declare it integer, from 0 to names - 1,
     * with the default's index. */
    const char *const *param_choices;

    /* Check the parameters against each other (each one's range is checked by the configuration
     * layer); called when a configuration that selects the technique is validated. */
    int (*check)(const double *params, gcx_error *err);
    int (*init)(gcx_tech *t, gcx_error *err); /* allocate t->state */
    void (*release)(gcx_tech *t);             /* free t->state */

    /* ---- GPU-level hooks ---- */
    void (*kernel_start)(gcx_tech *t, uint32_t kernel, uint64_t now);
    void (*kernel_end)(gcx_tech *t, uint32_t kernel, uint64_t now);
    void (*cta_start)(gcx_tech *t, uint32_t sm, uint32_t cta_slot, uint32_t cta_id, uint64_t now);
    void (*cta_end)(gcx_tech *t, uint32_t sm, uint32_t cta_slot, uint64_t now);
    /* Issue priority of a CTA slot's warps (higher issues first; 0 = normal). */
    int (*warp_priority)(gcx_tech *t, uint32_t sm, uint32_t cta_slot);
    /* A request the LD/ST unit created (before it reaches the L1D): may annotate r->tech[]. */
    void (*ldst_request)(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now);

    /* ---- L1D admission (kind l1d.admission) ---- */
    /* Nonzero: this global-memory request bypasses the L1D of `sm`. */
    int (*l1_bypass)(gcx_tech *t, uint32_t sm, const gcx_req *r, uint64_t now);
    /* `count` accesses the L1D accepted (fail = 0) or rejected with a reservation fail (fail = 1);
     * count > 1 when the model skipped cycles in which the LD/ST unit would have retried. */
    void (*l1_outcome)(gcx_tech *t, uint32_t sm, int fail, uint64_t count, uint64_t now);

    /* ---- line power states (kinds l1d.power and l2.power), per cache instance ---- */
    /* Before the cache looks up `set` (a request, or a fill choosing its line): a technique whose
     * line states change with time alone (cache decay) applies the changes due by `now` to the
     * set's lines, so the lookup and the victim choice see them. */
    void (*set_lookup)(gcx_tech *t, gcx_tcache *c, uint32_t set, uint64_t now);
    /* Before a request uses a present line whose data is powered (ON or DROWSY); returns the
     * extra cycles the access waits (wake-up latency). */
    uint32_t (*line_access)(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now);
    /* After the access completed (gating decisions). */
    void (*line_after_access)(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now);
    /* On a miss: zero means "do not allocate a line" (the data goes past this cache). */
    int (*allocate)(gcx_tech *t, gcx_tcache *c, const gcx_req *r, uint64_t now);
    /* A line was (re)filled with data; it is ON unless the hook says otherwise. Not called for the
     * lines the L2 prefill (l2.prefill: a kernel's MemcpyHtoD copies) installs just before
     * kernel_start, whose power state it leaves as it was: a technique that keeps empty lines OFF
     * powers those on in kernel_start (their fill_cycle is now; see ideal_gating.c). */
    void (*line_fill)(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now);
    /* The L2 prefill copied words into present `line`, which still held data: the copy wrote the
     * line without a request (a line it fills from empty is found at kernel_start, as above). */
    void (*line_prefill)(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now);
    /* A line's data is about to be dropped (eviction, invalidation, flush). */
    void (*line_evict)(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now);
    /* A line that holds no data but a tag the technique kept (it powered the data off) is about to
     * be taken by another block: the kept tag is lost. line_evict is not called (no data leaves). */
    void (*line_tag_replace)(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now);
    /* Whether present `line` still holds its data at `now` by the technique's rules, for a look at
     * the cache that must change nothing (no set_lookup runs): zero for a line whose data a lazy
     * change due by `now` has lost (a line past its decay cycle). Unset: it does. */
    int (*line_live)(gcx_tech *t, const gcx_tcache *c, uint32_t line, uint64_t now);
    /* A request matched the kept tag of a line whose data is OFF: it is served as a miss. */
    void (*line_off_hit)(gcx_tech *t, gcx_tcache *c, uint32_t line, const gcx_req *r, uint64_t now);
    /* The L2 partition of `c` accepted a request (hit, miss, merged miss or bypass) that SM `sm` sent
     * (`sm` >= the SM count for requests no SM sent): called once per L2 access, after the line
     * hooks above ran for it (L2 power techniques only). */
    void (*l2_request)(gcx_tech *t, gcx_tcache *c, uint32_t sm, uint64_t now);
    /* End of simulation for this cache: bring every line's residency up to `now`. */
    void (*cache_finish)(gcx_tech *t, gcx_tcache *c, uint64_t now);

    /* ---- L1D sharing (kind l1d.sharing) ----
     * The L1D offers a sharing technique the cacheable requests it receives and the fetches its
     * misses would send to the L2; the technique serves them through the cluster network with
     * the building blocks of sim/gpu.h (gcx_l1_serve, gcx_l1_access_private, gcx_l1_holds, gcx_l1_data_read,
     * gcx_cluster_send, gcx_l1_reply, gcx_l1_fetch_l2). Packets it sends come back through
     * cluster_receive, except answers to loads (GCX_CL_ANSWER), which the L1D delivers itself. */
    /* A cacheable request reached the L1D of `sm`: GCX_L1_PRIVATE lets the L1D serve it itself;
     * anything else is the outcome (0: taken, or a reservation-fail reason: retried). */
    int (*l1_request)(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now);
    /* The L1D of `sm` is about to send fetch f to the L2: nonzero means the technique took it and
     * will fill it (gcx_l1_reply) or send it on (gcx_l1_fetch_l2), where it waits for a free slot of
     * the miss queue. */
    int (*l1_fetch)(gcx_tech *t, uint32_t sm, gcx_req *f, uint64_t now);
    /* Would l1_fetch take the fetch of `sectors` (32 B sectors) that request r's miss in the L1D of
     * `sm` sends now? The L1D reserves a miss-queue slot only for a fetch that goes to the L2.
     * Changes nothing; unset means never (every fetch needs a slot). */
    int (*l1_fetch_in_cluster)(gcx_tech *t, uint32_t sm, const gcx_req *r, uint8_t sectors);
    /* A packet of the technique arrived at `sm` over the cluster network: 0 when handled; a
     * request-channel packet may return a reservation-fail reason, and is offered again. */
    int (*cluster_receive)(gcx_tech *t, uint32_t sm, gcx_req *r, uint64_t now);
    /* Fetch f filled `line` of the L1D of `sm`. */
    void (*l1_fill)(gcx_tech *t, uint32_t sm, uint32_t line, const gcx_req *f, uint64_t now);

    /* Earliest future cycle the technique must see (a phase boundary, a decision), or UINT64_MAX;
     * the model does not skip past it. */
    uint64_t (*next_event)(gcx_tech *t, uint64_t now);
    /* At the start of every cycle the model simulates, before any component acts in it (so a
     * decision due at a cycle applies to everything in that cycle); cycles the model skips are not
     * seen: ask for them with next_event. */
    void (*cycle_start)(gcx_tech *t, uint64_t now);

    /* ---- end of run ---- */
    void (*finish)(gcx_tech *t, uint64_t now);
    void (*report)(gcx_tech *t, gcx_stat_sink *sink);
} gcx_technique;

/* l1_request: the L1D serves the request as a private L1D. */
#define GCX_L1_PRIVATE (-1)

/* Parameters one technique may declare: gcx_tech.params holds them. */
#define GCX_TECH_MAX_PARAMS 16

/* An active technique in one simulation. */
struct gcx_tech {
    const gcx_technique *ops;
    gcx_gpu *gpu;
    void *state;
    double params[GCX_TECH_MAX_PARAMS]; /* the technique's parameters, in the order of ops->params */
};

/* The names of parameter i of a technique, or NULL if it is numeric. */
static inline const char *gcx_param_choices(const gcx_technique *t, int i)
{
    return t->param_choices ? t->param_choices[i] : NULL;
}

/* ---- registry (techniques/registry.c) ---- */
extern const gcx_technique *const gcx_techniques[];
const gcx_technique *gcx_technique_find(int kind, const char *name);
const char *gcx_tech_kind_key(int kind); /* "l1d.admission", ... */
/* Whether a NULL-terminated list of techniques (gcx_techniques, or a test's) fits what the core
 * keeps: a name once per kind, at most GCX_TECH_MAX_PARAMS parameters each, at most
 * GCX_MAX_TECH_PARAMS distinct ones in all (sim/config.h), and a parameter that several techniques
 * share declared the same way by each. GCX_OK, or GCX_ERR_VALUE saying what to change. */
int gcx_technique_list_check(const gcx_technique *const *list, gcx_error *err);

#endif

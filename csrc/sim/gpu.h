/* The cycle-level GPU model: SMs with warp schedulers and an LD/ST unit, per-SM L1Ds with MSHRs
 * and a miss queue, a crossbar to L2 sub-partitions, and DRAM channels. Every memory request is a
 * pooled gcx_req that moves through FIFOs stamped with the cycle it may leave (t_ready), so a
 * request advances at most one stage per cycle and idle stretches can be skipped.
 *
 * Files: gpu.c (build, kernel launch, CTA dispatch, the cycle loop, results), sm.c (schedulers,
 * scoreboard, coalescer, LD/ST unit), l1d.c, icnt.c, l2.c, dram.c, tcache.c (a cache in the
 * timing model: tags plus the line-state layer and statistics). */
#ifndef GCX_SIM_GPU_H
#define GCX_SIM_GPU_H

#include "cache/cache.h"
#include "sim/config.h"
#include "sim/workload.h"
#include "policies/policies.h"
#include "techniques/technique.h"

#define GCX_INF UINT64_MAX
#define GCX_NONE UINT32_MAX
#define GCX_WARP_SIZE 32
#define GCX_NREGS 256

/* ---- requests and queues ------------------------------------------------------------------ */

enum gcx_req_type {
    GCX_REQ_READ = 0,      /* load data */
    GCX_REQ_WRITE = 1,     /* store data (words says which) */
    GCX_REQ_ATOMIC = 2,    /* read-modify-write at the L2 */
    GCX_REQ_WRITEBACK = 3, /* dirty data leaving a cache */
};

enum gcx_req_flag {
    GCX_RF_L1_ALLOC = 1,    /* the reply fills an L1D line (an MSHR waits for it) */
    GCX_RF_PREDICTOR = 2,   /* issued by a LoSCache predictor CTA */
    GCX_RF_L2_ALLOC = 8,    /* the DRAM reply fills an L2 line */
    GCX_RF_BYPASS_L1 = 16,  /* the instruction asked not to be cached in L1D (.CG and the like) */
    GCX_RF_REMOTE_WAIT = 32, /* a remote read that waited for the remote L1D's own fetch (ATA) */
    GCX_RF_L1_DONE = 64,     /* its L1D access is complete (answered by an L1D, or its miss left for the L2) */
    GCX_RF_PIPED = 128,      /* it went through the L1D's latency pipeline (l1d.latency_queue) */
};

struct gcx_req {
    uint64_t addr;    /* line-aligned byte address (L1D line size) */
    uint64_t words;   /* 4-byte words of the line the request touches */
    uint64_t t_ready; /* cycle it may leave the queue it is in */
    uint64_t t_issue; /* cycle the LD/ST unit created it */
    struct gcx_req *next;
    struct gcx_req *parent; /* for an L2 fetch: none; for merged waiters: unused */
    uint32_t pc;
    uint32_t load; /* the SM's load-table entry to answer, or GCX_NONE: nobody waits for an answer
                    * (writebacks, stores without core.store_acks) */
    uint32_t sm;   /* requesting SM */
    uint32_t home; /* L1D that serves it (sharing), or the L2 partition on the way down */
    uint32_t line; /* cache line an MSHR entry belongs to */
    uint32_t mshr; /* for a fetch: the MSHR entry its data answers */
    uint16_t warp; /* warp slot */
    uint16_t cta_slot;
    uint8_t type;    /* enum gcx_req_type */
    uint8_t space;   /* Space of the instruction */
    uint8_t sectors; /* sectors of the line it needs */
    uint8_t lanes;   /* active lanes of the instruction (block utilisation) */
    uint16_t flags;  /* enum gcx_req_flag */
    uint8_t cluster; /* enum gcx_cluster_kind: what it is on the cluster network */
    int32_t tech[2]; /* technique payload (e.g. a predicted re-reference count) */
};

/* Bytes of the answer to request r, from the L2 or from the L1D that served it: a header, plus the
 * data (a store's acknowledgement has none; an atomic returns the words it touched; a load, the
 * sectors it asked for). */
static inline uint32_t gcx_answer_bytes(const gcx_req *r)
{
    if (r->type == GCX_REQ_WRITE)
        return 8;
    if (r->type == GCX_REQ_ATOMIC)
        return 8 + (uint32_t)gcx_popcount64(r->words) * 4;
    return 8 + (uint32_t)gcx_popcount64(r->sectors) * 32;
}

/* Packets on the cluster network (l1d.sharing): the network has a request channel (to the L1D
 * r->home) and a reply channel (back to the SM r->sm), so a reply never waits behind a request. */
enum gcx_cluster_kind {
    GCX_CL_NONE = 0,
    /* request channel, to r->home: */
    GCX_CL_REQUEST, /* a load or store for the L1D that serves its address (decoupled home) */
    GCX_CL_PROBE,   /* a tag lookup in a remote L1D (remote-sharing) */
    GCX_CL_READ,    /* read the data a remote tag array showed (ATA) */
    /* reply channel, to r->sm: */
    GCX_CL_ANSWER,  /* data answering a load that another SM's L1D served */
    GCX_CL_DATA,    /* data filling the requester's line (probe hit, remote read) */
    GCX_CL_MISS,    /* no data: the probe missed, or the line changed before the read arrived */
};

typedef struct gcx_queue {
    gcx_req *head, *tail;
    uint32_t n, cap;
} gcx_queue;

static inline int gcx_q_full(const gcx_queue *q) { return q->n >= q->cap; }
static inline int gcx_q_ready(const gcx_queue *q, uint64_t now) { return q->head && q->head->t_ready <= now; }
static inline void gcx_q_push(gcx_queue *q, gcx_req *r, uint64_t t_ready)
{
    r->t_ready = t_ready;
    r->next = NULL;
    if (q->tail)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    q->n++;
}
static inline gcx_req *gcx_q_pop(gcx_queue *q)
{
    gcx_req *r = q->head;
    q->head = r->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    r->next = NULL;
    return r;
}
static inline void gcx_q_push_front(gcx_queue *q, gcx_req *r)
{
    r->next = q->head;
    q->head = r;
    if (!q->tail)
        q->tail = r;
    q->n++;
}
/* Insert keeping t_ready order (for queues whose entries finish out of order). */
void gcx_q_insert_sorted(gcx_queue *q, gcx_req *r, uint64_t t_ready);

/* ---- caches in the timing model ---------------------------------------------------------- */

/* Statistics of one cache instance, written once: struct, aggregation and result keys. */
#define GCX_TCACHE_STATS(X)                                                                        \
    X(accesses, "requests the cache accepted (hits + misses)")                                     \
    X(hits, "accesses served from the cache")                                                      \
    X(misses, "accepted accesses not served from the cache (pending hits included)")               \
    X(pending_hits, "misses to a line already being fetched (merged into its MSHR); in the L2, only those " \
                    "the fetch in flight brings every sector of")                                    \
    X(read_accesses, "accepted reads")                                                             \
    X(write_accesses, "accepted writes")                                                           \
    X(tag_lookups, "tag array lookups, rejected attempts included")                               \
    X(data_reads, "reads answered from the data array: hits and each request a fill answers")      \
    X(data_writes, "data-array writes by stores")                                                  \
    X(read_sectors, "32-byte sectors read by data_reads")                                          \
    X(write_sectors, "32-byte sectors written by stores")                                          \
    X(read_units, "data_reads in 32-byte units of the cache's own sectors (a 64-byte one counts 2)") \
    X(write_units, "data written by stores, in 32-byte units of the cache's own sectors")         \
    X(fills, "line or sector fills")                                                               \
    X(fill_sectors, "32-byte sectors written by fills")                                            \
    X(evictions, "valid lines replaced")                                                           \
    X(invalidations, "lines dropped by write-evict, flushes or power-off")                          \
    X(writebacks, "dirty lines written to the next level")                                         \
    X(wakeups, "drowsy lines raised to full Vdd (by an access or a fill)")                         \
    X(off_hits, "requests that matched the kept tag of a powered-off line")                        \
    X(bypasses, "misses served without allocating a line")                                         \
    X(words_touched, "4-byte words touched by data-array accesses (divided word line at 4 B)")     \
    X(segments8, "8-byte segments touched by data-array accesses")                                 \
    X(segments16, "16-byte segments touched by data-array accesses")                               \
    X(segments32, "32-byte segments touched by data-array accesses")                               \
    X(write_words_touched, "4-byte words touched by data-array writes (stores)")                   \
    X(write_segments8, "8-byte segments touched by data-array writes")                             \
    X(write_segments16, "16-byte segments touched by data-array writes")                           \
    X(data_accesses, "data-array accesses by requests (reads and writes)")                         \
    X(lanes_sum, "active lanes summed over accesses (block utilisation numerator)")                \
    X(write_lanes_sum, "active lanes summed over data-array writes")                               \
    X(interval_sum, "cycles between consecutive accesses to a line, summed")                       \
    X(interval_count, "consecutive-access pairs measured")                                         \
    X(fail_line_alloc, "reservation fails: no line could be allocated")                            \
    X(fail_mshr_entry, "reservation fails: no free MSHR entry")                                    \
    X(fail_mshr_merge, "reservation fails: the MSHR entry holds no more requests")                 \
    X(fail_miss_queue, "reservation fails: the miss queue is full")                                \
    X(resid_on, "line-cycles with data array ON")                                                  \
    X(resid_drowsy, "line-cycles DROWSY")                                                          \
    X(resid_off, "line-cycles OFF")                                                                \
    X(live_cycles, "line-cycles from a fill to the last access of the data")                       \
    X(dead_nodata, "line-cycles holding no data")                                                  \
    X(dead_unused, "line-cycles holding data that is not accessed again")

typedef struct gcx_tcache_stats {
#define GCX_X(name, doc) uint64_t name;
    GCX_TCACHE_STATS(GCX_X)
#undef GCX_X
} gcx_tcache_stats;

#define GCX_HIST_ACCESS 16   /* A0, A1, A2-3, ..., A8192-16383, A16384+ */
#define GCX_HIST_INTERVAL 24 /* [0,1), [1,2), [2,4), ..., [2^21, 2^22), 2^22+ */

struct gcx_tcache {
    gcx_cache c;
    int level;        /* 1: L1D, 2: L2 */
    uint32_t id;      /* SM or partition */
    uint32_t *mshr_of; /* [n_lines] MSHR entry waiting for the line, or GCX_NONE */
    uint64_t *since;   /* [n_lines] cycle the current power state began */
    uint64_t (*resid)[3];   /* [n_lines] cycles in ON, DROWSY, OFF */
    uint64_t *empty_since;  /* [n_lines] cycle the line last became empty */
    uint64_t *word_valid;   /* [n_lines] valid 4-byte words (L2 lazy fetch on read) */
    uint64_t *word_dirty;   /* [n_lines] words written while the line held its data (L2 writebacks) */
    uint32_t *lifetime_accesses; /* [n_lines] accesses over the whole run */
    gcx_tcache_stats s;
    uint64_t hist_access[GCX_HIST_ACCESS];
    uint64_t hist_interval[GCX_HIST_INTERVAL];
    gcx_tech *power; /* the line power technique of this level */
};

/* ---- MSHRs ------------------------------------------------------------------------------- */

typedef struct gcx_mshr_entry {
    uint64_t addr;     /* line address being fetched */
    uint32_t line;     /* cache line it fills, or GCX_NONE (no allocation) */
    uint32_t n_waiting;
    uint8_t requested; /* 32-byte sectors asked from the next level */
    uint8_t received;  /* 32-byte sectors arrived */
    uint8_t used;
    uint8_t remote_wait; /* a fetch of this entry waits in another L1D's MSHR entry (ATA) */
    uint8_t left_l1;     /* the entry's data comes from below the L1Ds: a fetch went to the L2, or waits
                          * for another L1D's fetch (ATA); its waiting loads' L1D accesses are complete */
    gcx_req *waiting; /* requests answered when the data arrives (a list through next) */
    gcx_req *waiting_tail;
} gcx_mshr_entry;

typedef struct gcx_mshr {
    gcx_mshr_entry *e;
    uint32_t cap, used, merge_cap;
    uint32_t *free_list;
    uint32_t n_free;
    /* Open-addressing index addr -> entry, for entries not tied to a cache line (allocate on fill,
     * no-allocate misses): hash_cap is a power of two at least twice cap. */
    uint32_t *hash;
    uint32_t hash_mask;
} gcx_mshr;

/* ---- SMs --------------------------------------------------------------------------------- */

enum gcx_warp_state { GCX_WARP_EMPTY = 0, GCX_WARP_ACTIVE, GCX_WARP_BARRIER, GCX_WARP_DRAINING };

typedef struct gcx_warp {
    uint64_t ready_at;   /* earliest cycle the next instruction may issue; GCX_INF while a register waits on memory;
                          * DRAINING: the cycle its exit completes */
    uint64_t next, end;  /* next and one-past-last instruction index in the kernel */
    uint64_t age;        /* dispatch order, for greedy-then-oldest */
    uint64_t *reg_ready; /* [GCX_NREGS] cycle each register's value is available (GCX_INF: pending load) */
    uint32_t cta_slot;
    uint32_t pending_loads; /* memory instructions waiting for answers (loads; stores with core.store_acks) */
    uint16_t warp_in_cta;
    uint8_t state;
    uint8_t sched;
    uint8_t head_unit; /* execution unit of the next instruction, or GCX_UNIT_MEM */
    uint8_t need_fetch; /* the next instruction's line is not in the warp's instruction buffer */
    uint8_t fetch_wait; /* ... and the L1I is fetching it */
    uint64_t fetched_line; /* instruction line the warp last fetched */
    uint32_t next_waiter;  /* next warp waiting for the same instruction line */
} gcx_warp;

#define GCX_UNIT_MEM 255

typedef struct gcx_cta {
    uint32_t id;          /* linear CTA id in the kernel, GCX_NONE when the slot is free */
    uint32_t first_warp;  /* warp slot of warp 0 */
    uint32_t n_warps;
    uint32_t warps_live;  /* warps not finished (the CTA ends when none is left) */
    /* Warps that have not issued their last instruction: a barrier waits for these only, as
     * Accel-Sim takes a warp out of the barrier set when its exit issues. */
    uint32_t warps_running;
    uint32_t at_barrier;
    int priority;
} gcx_cta;

typedef struct gcx_load {
    uint64_t t_issue;
    uint32_t warp;
    uint32_t remaining;    /* requests not yet answered */
    uint32_t l1_remaining; /* requests whose L1D access is not complete yet (gcx_sm_l1_done) */
    uint8_t dst[2];
    uint8_t store; /* a store waiting for its acknowledgements (core.store_acks), not a load */
    uint32_t next_free;
} gcx_load;

/* A memory instruction in the LD/ST unit. */
typedef struct gcx_meminst {
    gcx_req *reqs;   /* requests still to send to the L1D (a list) */
    uint64_t t_ready; /* shared memory: cycle the unit is free again (GCX_INF until it reaches the head) */
    uint32_t warp;
    uint32_t degree;  /* shared memory: cycles its bank conflicts hold the unit */
    uint8_t dst[GCX_MAX_DST]; /* shared memory: registers it writes */
} gcx_meminst;

typedef struct gcx_l1 {
    gcx_tcache tc;
    gcx_mshr mshr;
    gcx_queue miss_q;  /* towards the crossbar */
    /* Fetches a sharing technique held and sends to the L2 after all (remote-sharing's after the
     * probe round trip, ATA's fall-backs), waiting in order for a free slot of the miss queue. */
    gcx_queue missq_wait;
    uint32_t missq_max; /* the most requests the miss queue held at once */
    gcx_queue hit_q;   /* answers in the hit pipeline */
    /* Packets waiting to enter the cluster network, by cycle: requests (the SM's request port) and
     * replies (the L1D's reply port) wait for their own port. */
    gcx_queue cluster_out[2];
    uint64_t *bank_free;
    int off;           /* switched off: every request bypasses it */
    int in_fail;       /* reason the request at the head of its cluster input last failed (0: none) */
    /* l1d.latency_queue: one pipeline per data bank (GPGPU-Sim 4.0's l1_latency_queue), whose requests
     * have their tags checked when they leave it */
    struct gcx_l1_pipe {
        gcx_queue q;
        int fail; /* reason its head last failed (0: none) */
    } *pipes;
    uint32_t piped; /* requests in all pipelines */
    /* Tag lookups of global reads, refused attempts included: ATA compares each with every tag
     * array of its cluster. */
    uint64_t global_read_lookups;
} gcx_l1;

/* Whether the L1D miss queue has room for `n` more requests. The slots taken are its requests' and
 * those of fetches waiting for a slot: every check for room counts both, so the queue never holds
 * more than l1d.miss_queue (but for the writebacks of a flush, or of a victim chosen at a fill). */
static inline int gcx_l1_miss_queue_has_room(const gcx_l1 *l1, uint32_t n)
{
    return l1->miss_q.n + l1->missq_wait.n + n <= l1->miss_q.cap;
}

/* Put r at the tail of the L1D miss queue, to leave from t_ready on. */
static inline void gcx_l1_miss_queue_push(gcx_l1 *l1, gcx_req *r, uint64_t t_ready)
{
    gcx_q_push(&l1->miss_q, r, t_ready);
    if (l1->miss_q.n > l1->missq_max)
        l1->missq_max = l1->miss_q.n;
}

/* An instruction line being fetched by the L1I. */
typedef struct gcx_ifetch {
    uint64_t line;
    uint32_t first_waiter;
    int used;
} gcx_ifetch;

typedef struct gcx_sm {
    uint32_t id;
    /* L1 instruction cache */
    gcx_cache icache;
    int icache_on;
    gcx_ifetch *ifetch;
    uint32_t n_ifetch, n_need_fetch, n_fetch_wait, fetch_rr;
    uint64_t code_base;
    uint64_t l1i_accesses, l1i_misses, l1i_mshr_hits;
    gcx_warp *warps;
    uint32_t n_warps, n_sched;
    gcx_cta *ctas;
    uint32_t n_ctas;
    uint32_t used_threads, used_regs, used_shmem, used_ctas, used_warps;
    uint32_t *sched_last;   /* per scheduler: last warp slot issued */
    uint32_t **sched_warps; /* per scheduler: its warp slots */
    uint32_t *sched_n;
    uint64_t (*unit_free)[GCX_N_EXEC_CLASSES]; /* per scheduler and unit */
    gcx_meminst *ldst;      /* ring buffer */
    uint32_t ldst_head, ldst_n;
    int ldst_fail;          /* reason of the last failed L1D attempt (0: none) */
    gcx_load *loads;
    uint32_t n_loads, loads_free;
    gcx_l1 l1;
    gcx_queue reply_q;      /* answers that arrived from the crossbar */
    uint64_t age_clock;
    /* Earliest cycle a scheduler could issue (0: unknown, look). Computed when a cycle issues
     * nothing; reset by anything that can make a warp issuable sooner. */
    uint64_t sched_wake;
    /* Earliest cycle a DRAINING warp with no answers to wait for completes its exit (GCX_INF: none). */
    uint64_t exit_wake;
    /* statistics */
    uint64_t warp_insts, thread_insts, load_latency_sum, loads_done, stall_cycles;
    uint64_t store_ack_latency_sum, stores_acked; /* core.store_acks: store issue to its last acknowledgement */
    uint64_t l1_access_latency_sum, l1_loads_done;  /* load issue to the completion of its last L1D access */
} gcx_sm;

/* ---- crossbar ---------------------------------------------------------------------------- */

typedef struct gcx_xbar {
    uint32_t n_src, n_dst;
    uint64_t *src_free, *dst_free; /* flit slot (cycle x flits_per_cycle) each port is free again */
    gcx_queue *dst_q;              /* packets on their way to, or waiting at, each destination */
    uint32_t latency, flit_bytes, flits_per_cycle;
    uint64_t flits, packets;
} gcx_xbar;

/* ---- L2 and DRAM ------------------------------------------------------------------------- */

typedef struct gcx_l2 {
    gcx_tcache tc;
    gcx_mshr mshr;
    gcx_queue reply_q; /* answers waiting for the reply crossbar */
    gcx_queue fill_q;  /* data back from DRAM */
    uint32_t in_flight; /* answers in the hit pipeline or waiting for the crossbar */
    uint64_t fails;     /* cycles the head request was refused, whatever the reason */
    uint8_t in_fail;    /* why the head request was refused this cycle (GCX_FAIL_*), 0 if not */
} gcx_l2;

typedef struct gcx_dram {
    gcx_queue pend;     /* on the way from the L2 (its latency), or arrived and waiting for room in q */
    gcx_queue q;        /* waiting to be scheduled (dram.queue entries) */
    gcx_queue busy;     /* being served, ordered by completion */
    double bus_exact;   /* when the data bus is free, in exact cycles */
    uint64_t bus_free;  /* the same, rounded up to a whole cycle */
    uint64_t *bank_free;
    uint64_t *open_row;
    uint64_t reads, writes, row_hits, row_misses, bytes;
    gcx_rng jitter; /* draws dram.latency_jitter: one stream per channel, from the run's seed */
} gcx_dram;

/* ---- the GPU ----------------------------------------------------------------------------- */

#define GCX_TS_FIELDS(X)                                                                           \
    X(cycle) X(warp_insts) X(thread_insts) X(l1d_accesses) X(l1d_hits) X(l1d_fails) X(l2_accesses)  \
    X(l2_hits) X(dram_reads) X(icnt_flits)

typedef struct gcx_ts_row {
#define GCX_X(name) uint64_t name;
    GCX_TS_FIELDS(GCX_X)
#undef GCX_X
} gcx_ts_row;

struct gcx_gpu {
    gcx_gpu_config cfg;
    const gcx_workload *wl;
    uint64_t seed;
    gcx_rng rng;
    uint64_t now;
    uint32_t kernel;        /* index of the running kernel */
    uint32_t next_cta;      /* next CTA (in the kernel's CTA order) to dispatch */
    uint32_t ctas_left;     /* CTAs of the kernel not finished */
    uint32_t dispatch_sm;   /* round-robin pointer */
    uint32_t cta_limit;     /* resident CTAs per SM for this kernel */
    gcx_sm *sms;
    gcx_l2 *l2;
    gcx_dram *dram;
    gcx_xbar req_net, reply_net;
    /* Between the L1Ds of a cluster: ports [0, sms) are the request channel of each L1D, ports
     * [sms, 2 sms) the reply channel of each SM (enum gcx_cluster_kind). */
    gcx_xbar cluster_net;
    gcx_tech tech[GCX_N_TECH_KINDS];
    /* request pool */
    gcx_req *free_reqs;
    gcx_req **req_slabs;
    uint32_t n_slabs, slab_cap;
    uint64_t reqs_live, reqs_made; /* requests in the pool; requests the LD/ST units created */
    uint64_t n_free_reqs;
    const char *fault; /* an internal inconsistency: the run stops with this message */
    volatile uint64_t *progress; /* optional: instructions issued so far, for progress bars */
    volatile uint64_t *stop;     /* optional: set non-zero by another thread to stop the run */
    int oom;                       /* the pool could not grow: the run stops with an error */
    /* derived geometry */
    uint32_t l1_sets, l2_sets, l2_per_channel, l1_line_shift, l2_line_shift;
    /* progress */
    uint64_t last_progress;
    uint64_t inst_total; /* instructions issued over all kernels */
    uint64_t warps_total;
    /* time series */
    gcx_ts_row *ts;
    size_t ts_n, ts_cap;
    uint64_t ts_next;
    /* totals */
    uint64_t kernel_cycles_start;
    uint64_t dram_prefill_lines;
    uint64_t icnt_stall_cycles;
};

/* Build and run. */
int gcx_gpu_init(gcx_gpu *g, const gcx_gpu_config *cfg, const gcx_workload *wl, uint64_t seed, gcx_error *err);
int gcx_gpu_run(gcx_gpu *g, gcx_error *err);
void gcx_gpu_free(gcx_gpu *g);

/* ---- services the components and techniques use ------------------------------------------- */

gcx_req *gcx_req_new(gcx_gpu *g);
void gcx_req_free(gcx_gpu *g, gcx_req *r);

/* tcache.c: a cache of the timing model */
int gcx_tcache_init(gcx_tcache *tc, const gcx_cache_config *cc, int level, uint32_t id, gcx_error *err);
void gcx_tcache_free(gcx_tcache *tc);
void gcx_tcache_set_state(gcx_tcache *tc, uint32_t line, int state, uint64_t when);
void gcx_tcache_note_access(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int is_write);
void gcx_tcache_note_access_in_order(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int is_write);
void gcx_tcache_note_fill(gcx_tcache *tc, uint32_t line, uint64_t now, uint8_t sectors);
/* A line that held no data receives some (a fill, or a write allocating it): a residency begins. */
void gcx_tcache_note_new_data(gcx_tcache *tc, uint32_t line, uint64_t now);
/* Drop the data of a valid line (eviction, invalidation, power-off with tag kept or not). */
void gcx_tcache_note_drop(gcx_tcache *tc, uint32_t line, uint64_t now);
void gcx_tcache_finish(gcx_tcache *tc, uint64_t now);
/* Why a cache refused a request: its four reservation fails, or a stall of its port that is not one
 * (an L1D bypass finding the miss queue full, an L2 whose answers fill its pipeline and l2.queue). */
enum { GCX_FAIL_NONE = 0, GCX_FAIL_LINE_ALLOC, GCX_FAIL_MSHR_ENTRY, GCX_FAIL_MSHR_MERGE, GCX_FAIL_MISS_QUEUE,
       GCX_FAIL_PORT };

/* Count n refusals for `reason`; 1 if they are reservation fails, each of which looked up the tags
 * first, 0 for a port stall, which looked up nothing. */
static inline int gcx_tcache_count_fail(gcx_tcache *tc, int reason, uint64_t n)
{
    switch (reason) {
    case GCX_FAIL_LINE_ALLOC: tc->s.fail_line_alloc += n; break;
    case GCX_FAIL_MSHR_ENTRY: tc->s.fail_mshr_entry += n; break;
    case GCX_FAIL_MSHR_MERGE: tc->s.fail_mshr_merge += n; break;
    case GCX_FAIL_MISS_QUEUE: tc->s.fail_miss_queue += n; break;
    default: return 0;
    }
    tc->s.tag_lookups += n;
    return 1;
}

/* Count one access: a tag lookup that reads or writes, and hits or misses. */
static inline void gcx_tcache_count_access(gcx_tcache *tc, int is_write, int hit)
{
    tc->s.tag_lookups++;
    tc->s.accesses++;
    if (is_write)
        tc->s.write_accesses++;
    else
        tc->s.read_accesses++;
    if (hit)
        tc->s.hits++;
    else
        tc->s.misses++;
}
uint32_t gcx_sector_mask_of_words(uint64_t words, uint32_t line_bytes, uint32_t sector_bytes);
/* Before a lookup of `set`: the power technique applies line-state changes due by `now`. */
static inline void gcx_tcache_before_lookup(gcx_tcache *tc, uint32_t set, uint64_t now)
{
    if (tc->power && tc->power->ops && tc->power->ops->set_lookup)
        tc->power->ops->set_lookup(tc->power, tc, set, now);
}

/* 32-byte sector masks <-> a cache's own sectors */
static inline uint8_t gcx_to_cache_sectors(uint8_t s32, const gcx_cache *c)
{
    uint32_t per = c->cfg.sector_bytes / 32;
    if (per <= 1)
        return s32;
    uint8_t out = 0;
    for (uint32_t i = 0; i < c->sectors_per_line; i++)
        if ((s32 >> (i * per)) & ((1u << per) - 1))
            out |= (uint8_t)(1u << i);
    return out;
}
/* The 4-byte words of a 32-byte sector mask. */
static inline uint64_t gcx_words_of_sectors(uint8_t s32)
{
    uint64_t w = 0;
    for (int i = 0; i < 8; i++)
        if (s32 >> i & 1)
            w |= 0xFFull << (8 * i);
    return w;
}
static inline uint8_t gcx_to_32_sectors(uint8_t cs, const gcx_cache *c)
{
    uint32_t per = c->cfg.sector_bytes / 32;
    if (per <= 1)
        return cs;
    uint8_t out = 0;
    for (uint32_t i = 0; i < c->sectors_per_line; i++)
        if ((cs >> i) & 1)
            out |= (uint8_t)(((1u << per) - 1) << (i * per));
    return out;
}

/* mshr */
int gcx_mshr_init(gcx_mshr *m, uint32_t cap, uint32_t merge_cap);
void gcx_mshr_free(gcx_mshr *m);
uint32_t gcx_mshr_alloc(gcx_mshr *m, uint64_t addr, uint32_t line);
uint32_t gcx_mshr_find(const gcx_mshr *m, uint64_t addr); /* entry fetching addr, or GCX_NONE */
void gcx_mshr_add(gcx_mshr *m, uint32_t e, gcx_req *r);
void gcx_mshr_release(gcx_mshr *m, uint32_t e);

/* crossbar */
int gcx_xbar_init(gcx_xbar *x, uint32_t n_src, uint32_t n_dst, uint32_t latency, uint32_t flit_bytes,
                  uint32_t flits_per_cycle, uint32_t buffer, gcx_error *err);
void gcx_xbar_free(gcx_xbar *x);
/* A source may put a packet on the crossbar when its port is free (it has finished sending the
 * previous one) and the destination's buffer has room. */
int gcx_xbar_can_send(const gcx_xbar *x, uint32_t src, uint32_t dst, uint64_t now);
/* The earliest cycle a packet due at `due` can leave source `src` (a sender's next event). */
static inline uint64_t gcx_xbar_departure(const gcx_xbar *x, uint32_t src, uint64_t due)
{
    uint64_t free_cycle = x->src_free[src] / x->flits_per_cycle;
    return free_cycle > due ? free_cycle : due;
}
void gcx_xbar_send(gcx_xbar *x, uint32_t src, uint32_t dst, gcx_req *r, uint32_t bytes, uint64_t now);
/* A control packet of `bytes` that carries no request: it occupies the two ports and counts its
 * flits like any packet; returns the cycle it arrives. */
uint64_t gcx_xbar_charge(gcx_xbar *x, uint32_t src, uint32_t dst, uint32_t bytes, uint64_t now);
uint64_t gcx_xbar_next_event(const gcx_xbar *x);

/* per-component cycles; each returns nonzero if it made progress */
int gcx_sm_cycle(gcx_gpu *g, gcx_sm *sm);
int gcx_l1_cycle(gcx_gpu *g, gcx_sm *sm);
int gcx_l2_cycle(gcx_gpu *g, uint32_t p);
/* The partition whose head request was just refused would be refused on each of n skipped cycles. */
void gcx_l2_count_skipped_fails(gcx_gpu *g, uint32_t p, uint64_t n);
int gcx_dram_cycle(gcx_gpu *g, uint32_t ch);
uint64_t gcx_sm_next_event(gcx_gpu *g, gcx_sm *sm);
uint64_t gcx_l1_next_event(gcx_gpu *g, gcx_sm *sm);
uint64_t gcx_l2_next_event(gcx_gpu *g, uint32_t p);
uint64_t gcx_dram_next_event(gcx_gpu *g, uint32_t ch);

/* What one CTA of kernel k takes from an SM, as GPGPU-Sim's max_cta counts it: thread slots for
 * whole warps, and registers for those slots at a per-thread count rounded up to a multiple of 4
 * (its register allocation granularity). */
static inline uint32_t gcx_cta_threads(const gcx_kernel *k) { return k->warps_per_cta * GCX_WARP_SIZE; }
static inline uint64_t gcx_cta_regs(const gcx_kernel *k)
{
    return (((uint64_t)k->nregs + 3) & ~(uint64_t)3) * gcx_cta_threads(k); /* 64-bit: nregs may be 2^32 - 1 */
}

/* sm.c */
int gcx_sm_init(gcx_gpu *g, gcx_sm *sm, uint32_t id, gcx_error *err);
void gcx_sm_free(gcx_sm *sm);
void gcx_sm_answer(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now); /* a load request's data arrived */
void gcx_sm_l1_done(gcx_gpu *g, gcx_req *r, uint64_t now); /* a request's L1D access is complete */
void gcx_sm_launch_cta(gcx_gpu *g, gcx_sm *sm, uint32_t slot, uint32_t cta_index, uint64_t now);
void gcx_sm_ifill(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now); /* an instruction line arrived */
void gcx_sm_refresh_priorities(gcx_gpu *g, gcx_sm *sm);
int gcx_sm_busy(const gcx_sm *sm);

/* l1d.c: gcx_l1_access returns 0 when the L1D accepted the request, else a GCX_FAIL_* reason */
void gcx_l1_count_skipped_fails(gcx_gpu *g, gcx_sm *sm, uint64_t n, uint64_t now);
int gcx_l1_access(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now);
void gcx_l1_reply(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now);
/* Write back dirty lines and drop every line (switching an L1D off). */
void gcx_l1_flush(gcx_gpu *g, gcx_sm *sm, uint64_t now);
/* Power one line off: its data is dropped, its tag invalidated, and it is OFF, from `lost` (cache
 * decay's decay cycle, <= now: the residency statistics end there, whenever the switch-off is
 * found); dirty data is written back now. A line being fetched is left alone. */
void gcx_l1_power_off(gcx_gpu *g, gcx_sm *sm, uint32_t line, uint64_t lost, uint64_t now);
int gcx_l1_init(gcx_gpu *g, gcx_sm *sm, gcx_error *err);
void gcx_l1_free(gcx_l1 *l1);

/* Building blocks of the l1d.sharing techniques (csrc/techniques/l1d_sharing/): */
/* Serve r in the L1D of `sm` as a private L1D would (bypass, hit, merge, miss and fetch,
 * write-evict), with its statistics: 0, or a reservation-fail reason. */
int gcx_l1_serve(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now);
/* The same for a request that already passed this L1D's bypass checks (from l1_request). */
int gcx_l1_access_private(gcx_gpu *g, gcx_sm *sm, gcx_req *r, uint64_t now);
/* A tag comparison: the line of the L1D of `sm` holding every 32-byte sector of `sectors` of the
 * line at addr (any valid sector when sectors is 0), or GCX_NONE. Like the L1D's own lookups it
 * first applies the power technique's lazy line-state changes due in that set (cache decay), and
 * changes nothing else. */
uint32_t gcx_l1_holds(gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors);
/* Whether the L1D of `sm` holds data of the line at addr at `now`, for a measurement (the replication
 * sample): no lookup, so nothing changes; a line the power technique has not yet switched off but
 * whose data is lost by `now` (past its decay cycle) does not count. */
int gcx_l1_has_copy(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint64_t now);
/* A tag comparison that finds the line at addr being fetched into the L1D of `sm` (its tag reserved,
 * every 32-byte sector of `sectors` asked for) by an entry that waits on no other L1D and can take
 * one more request: that MSHR entry, or GCX_NONE. */
uint32_t gcx_l1_fetching(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors);
/* Whether the line at addr is being fetched into the L1D of `sm` with every sector of `sectors`
 * asked for, whether or not its entry could take another request. */
int gcx_l1_being_fetched(const gcx_gpu *g, uint32_t sm, uint64_t addr, uint8_t sectors);
/* Another L1D's fetch f waits in MSHR entry `entry` of the L1D of `sm`: when that fill completes,
 * f goes back to its L1D with the data (GCX_CL_DATA, flagged GCX_RF_REMOTE_WAIT). */
void gcx_l1_wait_fill(gcx_gpu *g, uint32_t sm, uint32_t entry, gcx_req *f, uint64_t now);
/* Read `line` of the L1D of `sm` for another SM's request: data-bank and wake-up waits and the
 * access statistics. Returns the cycle the data is ready (after the hit latency). */
uint64_t gcx_l1_data_read(gcx_gpu *g, uint32_t sm, uint32_t line, const gcx_req *r, uint64_t now);
/* Hand r to the cluster network at `from` when cycle `when` comes (kind in r->cluster). */
void gcx_cluster_send(gcx_gpu *g, uint32_t from, gcx_req *r, uint64_t when);
/* A fetch a sharing technique held goes to the L2 after all (remote-sharing's after its probe round
 * trip, ATA's fall-back): into the miss queue if it has room, else it waits in order behind other
 * such fetches for a free slot. */
void gcx_l1_fetch_l2(gcx_gpu *g, uint32_t sm, gcx_req *f, uint64_t now);

/* l2.c */
int gcx_l2_init(gcx_gpu *g, uint32_t p, gcx_error *err);
void gcx_l2_free(gcx_l2 *l2);
/* addr's interleaving chunk, hashed when l2.index = "xor": the chunk's remainder by the number of
 * partitions is its partition, its quotient its place within the partition (and its channel). The
 * hash is invertible, so no two chunks share both. */
static inline uint64_t gcx_l2_chunk(const gcx_gpu *g, uint64_t addr)
{
    uint64_t chunk = addr / (uint64_t)g->cfg.l2_interleave_bytes;
    if (g->cfg.l2_index == GCX_INDEX_CHOICE_XOR) {
        uint32_t k = gcx_log2((uint64_t)g->cfg.l2_partitions) + 1;
        chunk ^= (chunk >> k) ^ (chunk >> (2 * k));
    }
    return chunk;
}
uint32_t gcx_l2_partition_of(const gcx_gpu *g, uint64_t addr);
void gcx_l2_prefill(gcx_gpu *g, uint64_t addr, uint64_t bytes);
/* The line of partition p whose tag is addr's (data present, pending or powered off), or GCX_NONE. */
uint32_t gcx_l2_find_line(const gcx_gpu *g, uint32_t p, uint64_t addr);
/* Power a line off; dirty data is written back to DRAM now. Its data is lost and it is OFF from
 * `lost` (<= now: cache decay's decay cycle, found later by a lazy switch-off). keep_tag: the tag
 * stays (LoSCache). 0 when the line cannot be gated now (no tag, or being fetched). */
int gcx_l2_power_off(gcx_gpu *g, gcx_tcache *tc, uint32_t line, uint64_t lost, uint64_t now, int keep_tag);

/* dram.c */
int gcx_dram_init(gcx_gpu *g, uint32_t ch, gcx_error *err);
void gcx_dram_free(gcx_dram *d);
/* Whether requests that reached channel ch wait for room in its scheduler's queue (then the L2
 * takes no request that may need DRAM). */
int gcx_dram_backlogged(gcx_gpu *g, uint32_t ch);
void gcx_dram_push(gcx_gpu *g, uint32_t ch, gcx_req *r, uint64_t t_ready);

/* techniques: call the hook of every active technique that has one */
#define GCX_TECH_EACH(g, t) for (gcx_tech *t = (g)->tech; t < (g)->tech + GCX_N_TECH_KINDS; t++)

#endif

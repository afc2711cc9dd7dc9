/* The set-associative cache every gpucachex cache level is built from: geometry, tags,
 * sectors, write policies, per-line metadata, and replacement through a policy interface.
 *
 * Lines are numbered line = set * ways + way. A line holds a line address (address >> log2(line
 * bytes)) or GCX_TAG_NONE. Sectored caches keep a valid and a dirty bit per sector; an
 * unsectored cache is a sectored one with a single sector. A "reserved" line has been allocated
 * for a miss whose data has not arrived yet (timing mode); it cannot be chosen as a victim. */
#ifndef GCX_CACHE_H
#define GCX_CACHE_H

#include "gcx.h"

#define GCX_TAG_NONE UINT64_MAX
#define GCX_MAX_WAYS 64
#define GCX_MAX_SECTORS 8
#define GCX_MAX_POLICY_PARAMS 4
#define GCX_MAX_POLICIES 16 /* entries of policies/registry.c */

enum gcx_index_fn {
    GCX_INDEX_MOD = 0, /* set = line address mod sets */
    GCX_INDEX_XOR = 1, /* set = (line ^ line >> k ^ line >> 2k) mod sets, k = ceil(log2 sets) */
    GCX_INDEX_FERMI = 2, /* GPGPU-Sim's Fermi L1D hash (32 or 64 sets), see gcx_cache_set_of */
};

/* Power state of a line's data array (the line-state layer; tags are always powered). */
enum gcx_line_state { GCX_LINE_ON = 0, GCX_LINE_DROWSY = 1, GCX_LINE_OFF = 2 };

typedef struct gcx_cache gcx_cache;

/* Everything the cache and the techniques attached to it know about one line. */
typedef struct gcx_line_meta {
    uint64_t last_access;  /* cycle (functional mode: access index) of the last access */
    uint64_t fill_cycle;   /* cycle of the fill */
    uint32_t access_count; /* accesses since the fill, the filling access included (timing mode: in
                            * the current residency, restarted when a line that held no data gets some) */
    uint8_t valid;         /* valid sectors, a bit per sector */
    uint8_t dirty;         /* dirty sectors */
    uint8_t reserved;      /* 1 while a fill is pending (timing mode) */
    uint8_t state;         /* enum gcx_line_state */
} gcx_line_meta;

/* A named numeric parameter that a plug-in (policy or technique) declares, so Python can list
 * and validate it without knowing the plug-in. */
typedef struct gcx_param_spec {
    const char *name;
    const char *doc;
    double default_value;
    double min_value;
    double max_value;
    int is_integer; /* 0: a real number; 1: an integer; 2: a boolean (0 or 1, shown to Python as a bool) */
} gcx_param_spec;

/* Replacement policy: the cache calls these hooks and never asks which policy it has.
 * Per-line state lives in c->repl[line] (32 bits); policy-wide state in c->repl_clock and
 * c->repl_param[]. `victim` receives a non-empty bit mask of the ways it may choose. */
typedef struct gcx_policy {
    const char *name;
    const char *doc;
    const gcx_param_spec *params;
    int n_params;
    int (*init)(gcx_cache *c, const double *params, gcx_error *err); /* may be NULL */
    void (*on_hit)(gcx_cache *c, uint32_t line);
    void (*on_fill)(gcx_cache *c, uint32_t line);
    uint32_t (*victim)(gcx_cache *c, uint32_t set, uint64_t candidates);
    /* Optional functional-mode fast path; it must leave exactly the state and statistics the hook
     * path would (the tests compare the two on random traces). NULL: use the hooks. */
    void (*run)(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n);
} gcx_policy;

typedef struct gcx_cache_config {
    uint32_t sets;
    uint32_t ways;
    uint32_t line_bytes;
    uint32_t sector_bytes; /* 0 or line_bytes: not sectored */
    int index_fn;          /* enum gcx_index_fn */
    int write_back;        /* 1: write-back (dirty lines written on eviction); 0: write-through */
    int write_allocate;    /* 1: a write miss allocates the line */
    const gcx_policy *policy;
    double policy_params[GCX_MAX_POLICY_PARAMS]; /* in the order of policy->params */
    uint64_t seed;
} gcx_cache_config;

/* Counters, written once: the struct, the reset and the binding's dict come from this list. */
#define GCX_CACHE_STATS(X)                                                                     \
    X(accesses, "reads + writes looked up in the cache")                                       \
    X(reads, "read accesses")                                                                  \
    X(writes, "write accesses")                                                                \
    X(hits, "accesses whose line and sector were present")                                     \
    X(misses, "accesses that were not hits (hits + misses = accesses)")                        \
    X(read_misses, "read accesses that missed")                                                \
    X(write_misses, "write accesses that missed")                                              \
    X(sector_misses, "misses whose line was present but whose sector was not")                 \
    X(fills, "lines or sectors brought in on a miss")                                          \
    X(evictions, "valid lines replaced to make room for a fill")                               \
    X(writebacks, "evicted lines that held dirty data (written back to the next level)")       \
    X(write_throughs, "writes forwarded to the next level (write-through, or no-allocate miss)")

typedef struct gcx_cache_stats {
#define GCX_X(name, doc) uint64_t name;
    GCX_CACHE_STATS(GCX_X)
#undef GCX_X
} gcx_cache_stats;

struct gcx_cache {
    gcx_cache_config cfg;
    uint32_t n_lines;
    uint32_t line_shift;       /* log2(line_bytes) */
    uint32_t sector_shift;     /* log2(sector_bytes) */
    uint32_t sectors_per_line; /* 1 when not sectored */
    uint32_t xor_shift;        /* k of GCX_INDEX_XOR */
    int sets_pow2;
    uint64_t set_mask;
    unsigned __int128 set_magic; /* fast modulo by sets when not a power of two */

    /* Tags and replacement state are separate arrays so a set's ways are contiguous for the
     * search; everything else about a line sits in one record (one host cache line touched). */
    uint64_t *tag;       /* [n_lines] line address or GCX_TAG_NONE */
    uint32_t *repl;      /* [n_lines] replacement policy state (stamps, RRPVs, ...) */
    gcx_line_meta *meta; /* [n_lines] */

    uint32_t repl_clock;
    uint64_t repl_param[GCX_MAX_POLICY_PARAMS];
    gcx_rng rng;

    gcx_cache_stats stats;
};

/* Outcome of one functional access. */
typedef struct gcx_access {
    int hit;
    int sector_miss;
    int filled;             /* a line or sector was brought in */
    int evicted;            /* a valid line was replaced */
    int writeback;          /* ... and it was dirty */
    uint64_t evicted_line;  /* its line address */
    uint32_t line;          /* index of the line now holding the data, or UINT32_MAX */
} gcx_access;

int gcx_cache_init(gcx_cache *c, const gcx_cache_config *cfg, gcx_error *err);
void gcx_cache_free(gcx_cache *c);
void gcx_cache_reset(gcx_cache *c); /* invalidate everything and clear statistics */

/* Validate a configuration without allocating anything. */
int gcx_cache_check_config(const gcx_cache_config *cfg, gcx_error *err);

/* One read or write at byte address `addr`, with full bookkeeping. */
void gcx_cache_access(gcx_cache *c, uint64_t addr, int is_write, uint64_t cycle, gcx_access *out);

/* Run a whole address stream (functional mode); writes may be NULL (all reads). Uses the
 * policy's fast path when it has one. */
void gcx_cache_run(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n);

/* The same through the policy hooks only (the reference the fast paths are tested against). */
void gcx_cache_run_hooks(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n);

/* Stamp-based policies take stamps from c->repl_clock. Before the 32-bit clock would wrap,
 * every set's stamps are replaced by their rank within the set (0 stays 0): each set keeps its
 * order, so no decision changes, and the clock restarts above every rank. */
#define GCX_STAMP_LIMIT (UINT32_MAX - (1u << 22))
void gcx_cache_renumber_stamps(gcx_cache *c);
static inline uint32_t gcx_next_stamp(gcx_cache *c)
{
    if (c->repl_clock >= GCX_STAMP_LIMIT)
        gcx_cache_renumber_stamps(c);
    return ++c->repl_clock;
}

/* Branch-free functional run for policies whose per-line state is a stamp from repl_clock:
 * `stamp_on_hit` 1 for LRU (hits refresh the stamp), 0 for FIFO (only fills do). Empty lines
 * hold stamp 0, so the smallest stamp is also "the first invalid way". */
void gcx_cache_run_stamped(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n, int stamp_on_hit);

/* Building blocks for the timing model. */
static inline uint64_t gcx_line_addr(const gcx_cache *c, uint64_t addr) { return addr >> c->line_shift; }
static inline uint32_t gcx_sector_of(const gcx_cache *c, uint64_t addr)
{
    return (uint32_t)((addr >> c->sector_shift) & (c->sectors_per_line - 1));
}

static inline uint64_t gcx_fastmod_u64(uint64_t a, unsigned __int128 magic, uint64_t d)
{
    /* Lemire, Kaser, Kurz, "Faster remainder by direct computation" (2019): with
     * magic = floor((2^128 - 1) / d) + 1, a mod d = high 64 bits of (low 128 bits of magic*a) * d. */
    unsigned __int128 low = magic * a;
    unsigned __int128 bottom = ((unsigned __int128)(uint64_t)low * d) >> 64;
    unsigned __int128 top = (low >> 64) * d;
    return (uint64_t)((bottom + top) >> 64);
}

static inline uint32_t gcx_cache_set_of(const gcx_cache *c, uint64_t line_addr)
{
    uint64_t h = line_addr;
    if (c->cfg.index_fn == GCX_INDEX_FERMI) {
        /* The set index GPGPU-Sim's Fermi configurations give the L1D (dl1 option "H", from
         * Nugteren et al., HPCA 2014): the low five bits of the line address XORed with byte-address
         * bits 13, 14, 15, 17 and 19; with 64 sets, byte-address bit 12 is the sixth bit. It
         * spreads the power-of-two row pitches that a plain modulo index puts in one set. */
        uint64_t a = line_addr << c->line_shift;
        uint32_t upper = (uint32_t)(((a >> 13) & 0x7) | ((a >> 14) & 0x8) | ((a >> 15) & 0x10));
        uint32_t set = ((uint32_t)line_addr & 0x1F) ^ upper;
        if (c->cfg.sets == 64)
            set |= (uint32_t)((a >> 7) & 0x20);
        return set;
    }
    if (c->cfg.index_fn == GCX_INDEX_XOR)
        h ^= (h >> c->xor_shift) ^ (h >> (2 * c->xor_shift));
    if (c->sets_pow2)
        return (uint32_t)(h & c->set_mask);
    return (uint32_t)gcx_fastmod_u64(h, c->set_magic, c->cfg.sets);
}

/* Way holding line_addr in `set`, or -1. Does not change any state. */
static inline int gcx_cache_find(const gcx_cache *c, uint32_t set, uint64_t line_addr)
{
    const uint64_t *t = c->tag + (size_t)set * c->cfg.ways;
    for (uint32_t w = 0; w < c->cfg.ways; w++)
        if (t[w] == line_addr)
            return (int)w;
    return -1;
}

/* Way to allocate in `set`: the first empty unreserved way, else the first unreserved way whose
 * data is powered off (tag kept, nothing valid), else the policy's victim among unreserved ways;
 * -1 when every way is reserved (a reservation fail). */
int gcx_cache_pick_victim(gcx_cache *c, uint32_t set);

/* Drop line `line` (set*ways+way): returns 1 and its address if it held valid data, and
 * whether that data was dirty, without touching the statistics. */
int gcx_cache_invalidate(gcx_cache *c, uint32_t line, uint64_t *line_addr, int *was_dirty);

/* Install line_addr in `line` (already chosen and emptied), valid sectors `sectors`. */
void gcx_cache_install(gcx_cache *c, uint32_t line, uint64_t line_addr, uint8_t sectors, uint64_t cycle);

/* Record a use of `line` at `cycle` in its metadata only, not in the replacement order. */
static inline void gcx_cache_note_use(gcx_cache *c, uint32_t line, uint64_t cycle)
{
    c->meta[line].access_count++;
    c->meta[line].last_access = cycle;
}

/* Record a use of `line` by an access at `cycle` (policy hit hook and metadata). */
static inline void gcx_cache_touch(gcx_cache *c, uint32_t line, uint64_t cycle)
{
    c->cfg.policy->on_hit(c, line);
    gcx_cache_note_use(c, line, cycle);
}

#endif

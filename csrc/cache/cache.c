/* Set-associative cache: construction, validation, allocation and the functional access path.
 * The timing model composes the same building blocks (find, pick_victim, install, touch). */
#include "cache/cache.h"
#include "cache/set_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gcx_cache_check_config(const gcx_cache_config *cfg, gcx_error *err)
{
    if (cfg->sets == 0)
        return gcx_fail(err, GCX_ERR_VALUE, "sets must be at least 1, got 0");
    if (cfg->ways == 0 || cfg->ways > GCX_MAX_WAYS)
        return gcx_fail(err, GCX_ERR_VALUE, "ways must be between 1 and %d, got %u", GCX_MAX_WAYS, cfg->ways);
    if (cfg->line_bytes < 4 || !gcx_is_pow2(cfg->line_bytes) || cfg->line_bytes > (1u << 20))
        return gcx_fail(err, GCX_ERR_VALUE,
                        "line_bytes must be a power of two between 4 and 1048576, got %u", cfg->line_bytes);
    if (cfg->sector_bytes != 0 && cfg->sector_bytes != cfg->line_bytes) {
        if (!gcx_is_pow2(cfg->sector_bytes) || cfg->sector_bytes > cfg->line_bytes)
            return gcx_fail(err, GCX_ERR_VALUE,
                            "sector_bytes must be a power of two no larger than line_bytes (%u), got %u",
                            cfg->line_bytes, cfg->sector_bytes);
        if (cfg->line_bytes / cfg->sector_bytes > GCX_MAX_SECTORS)
            return gcx_fail(err, GCX_ERR_VALUE, "at most %d sectors per line, got %u (line_bytes %u / sector_bytes %u)",
                            GCX_MAX_SECTORS, cfg->line_bytes / cfg->sector_bytes, cfg->line_bytes,
                            cfg->sector_bytes);
    }
    if ((uint64_t)cfg->sets * cfg->ways > (1u << 28))
        return gcx_fail(err, GCX_ERR_VALUE, "sets x ways = %llu lines is more than the 2^28 supported",
                        (unsigned long long)cfg->sets * cfg->ways);
    if (cfg->index_fn != GCX_INDEX_MOD && cfg->index_fn != GCX_INDEX_XOR && cfg->index_fn != GCX_INDEX_FERMI)
        return gcx_fail(err, GCX_ERR_VALUE, "unknown set index function %d", cfg->index_fn);
    if (cfg->index_fn == GCX_INDEX_FERMI && cfg->sets != 32 && cfg->sets != 64)
        return gcx_fail(err, GCX_ERR_VALUE, "the fermi set index needs 32 or 64 sets, got %u", cfg->sets);
    if (!cfg->policy)
        return gcx_fail(err, GCX_ERR_VALUE, "no replacement policy given");
    char prefix[96];
    snprintf(prefix, sizeof prefix, "policy %s: ", cfg->policy->name);
    for (int i = 0; i < cfg->policy->n_params; i++) {
        const gcx_param_spec *p = &cfg->policy->params[i];
        int rc = gcx_check_number(prefix, p->name, cfg->policy_params[i], p->min_value, p->max_value, p->is_integer,
                                  err);
        if (rc != GCX_OK)
            return rc;
    }
    return GCX_OK;
}

void gcx_cache_free(gcx_cache *c)
{
    free(c->tag);
    free(c->repl);
    free(c->meta);
    memset(c, 0, sizeof *c);
}

void gcx_cache_reset(gcx_cache *c)
{
    size_t n = c->n_lines;
    for (size_t i = 0; i < n; i++)
        c->tag[i] = GCX_TAG_NONE;
    memset(c->meta, 0, n * sizeof *c->meta); /* state 0 = GCX_LINE_ON */
    memset(c->repl, 0, n * sizeof *c->repl);
    c->repl_clock = 0;
    memset(&c->stats, 0, sizeof c->stats);
    gcx_rng_seed(&c->rng, c->cfg.seed);
}

int gcx_cache_init(gcx_cache *c, const gcx_cache_config *cfg, gcx_error *err)
{
    memset(c, 0, sizeof *c);
    int rc = gcx_cache_check_config(cfg, err);
    if (rc)
        return rc;
    c->cfg = *cfg;
    if (c->cfg.sector_bytes == 0)
        c->cfg.sector_bytes = c->cfg.line_bytes;
    c->n_lines = cfg->sets * cfg->ways;
    c->line_shift = gcx_log2(cfg->line_bytes);
    c->sector_shift = gcx_log2(c->cfg.sector_bytes);
    c->sectors_per_line = cfg->line_bytes / c->cfg.sector_bytes;
    c->sets_pow2 = gcx_is_pow2(cfg->sets);
    c->set_mask = (uint64_t)cfg->sets - 1;
    c->set_magic = ~(unsigned __int128)0 / cfg->sets + 1;
    c->xor_shift = gcx_log2(cfg->sets) + (gcx_is_pow2(cfg->sets) ? 0 : 1);
    if (c->xor_shift == 0)
        c->xor_shift = 1;

    size_t n = c->n_lines;
    c->tag = malloc(n * sizeof *c->tag);
    c->repl = malloc(n * sizeof *c->repl);
    c->meta = malloc(n * sizeof *c->meta);
    if (!c->tag || !c->repl || !c->meta) {
        gcx_cache_free(c);
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory allocating a cache of %zu lines", n);
    }
    gcx_cache_reset(c);
    if (cfg->policy->init) {
        rc = cfg->policy->init(c, c->cfg.policy_params, err);
        if (rc) {
            gcx_cache_free(c);
            return rc;
        }
    }
    return GCX_OK;
}

int gcx_cache_pick_victim(gcx_cache *c, uint32_t set)
{
    uint32_t ways = c->cfg.ways;
    size_t base = (size_t)set * ways;
    uint64_t candidates = 0;
    int no_data = -1;
    for (uint32_t w = 0; w < ways; w++) {
        if (c->meta[base + w].reserved)
            continue;
        if (c->tag[base + w] == GCX_TAG_NONE)
            return (int)w;
        /* A line whose data was powered off keeps only its tag: nothing is lost by taking it. */
        if (no_data < 0 && c->meta[base + w].valid == 0)
            no_data = (int)w;
        candidates |= 1ull << w;
    }
    if (no_data >= 0)
        return no_data;
    if (!candidates)
        return -1;
    return (int)c->cfg.policy->victim(c, set, candidates);
}

int gcx_cache_invalidate(gcx_cache *c, uint32_t line, uint64_t *line_addr, int *was_dirty)
{
    if (c->tag[line] == GCX_TAG_NONE)
        return 0;
    if (line_addr)
        *line_addr = c->tag[line];
    if (was_dirty)
        *was_dirty = c->meta[line].dirty != 0;
    c->tag[line] = GCX_TAG_NONE;
    c->meta[line].valid = 0;
    c->meta[line].dirty = 0;
    c->meta[line].reserved = 0;
    return 1;
}

void gcx_cache_install(gcx_cache *c, uint32_t line, uint64_t line_addr, uint8_t sectors, uint64_t cycle)
{
    gcx_line_meta *m = &c->meta[line];
    c->tag[line] = line_addr;
    m->valid = sectors;
    m->dirty = 0;
    m->access_count = 0;
    m->fill_cycle = cycle;
    m->last_access = cycle;
    c->cfg.policy->on_fill(c, line);
}

void gcx_cache_access(gcx_cache *c, uint64_t addr, int is_write, uint64_t cycle, gcx_access *out)
{
    gcx_cache_stats *s = &c->stats;
    uint64_t la = addr >> c->line_shift;
    uint32_t set = gcx_cache_set_of(c, la);
    uint8_t sector_bit = (uint8_t)(1u << gcx_sector_of(c, addr));
    int way = gcx_cache_find(c, set, la);

    out->hit = out->sector_miss = out->filled = out->evicted = out->writeback = 0;
    out->line = UINT32_MAX;
    s->accesses++;
    if (is_write)
        s->writes++;
    else
        s->reads++;

    if (way >= 0 && (c->meta[(size_t)set * c->cfg.ways + (uint32_t)way].valid & sector_bit)) {
        uint32_t line = set * c->cfg.ways + (uint32_t)way;
        s->hits++;
        out->hit = 1;
        out->line = line;
        gcx_cache_touch(c, line, cycle);
        if (is_write) {
            if (c->cfg.write_back)
                c->meta[line].dirty |= sector_bit;
            else
                s->write_throughs++;
        }
        return;
    }

    s->misses++;
    if (is_write)
        s->write_misses++;
    else
        s->read_misses++;

    if (is_write && !c->cfg.write_allocate) {
        /* No-allocate: the write goes to the next level and the cache is unchanged. A present line
         * missing the sector is still a sector miss, allocated or not (the counter's definition). */
        if (way >= 0) {
            s->sector_misses++;
            out->sector_miss = 1;
        }
        s->write_throughs++;
        return;
    }

    uint32_t line;
    if (way >= 0) {
        /* Line present, sector missing: fetch just that sector. */
        line = set * c->cfg.ways + (uint32_t)way;
        s->sector_misses++;
        out->sector_miss = 1;
        c->meta[line].valid |= sector_bit;
        c->meta[line].access_count++;
        c->meta[line].last_access = cycle;
        c->cfg.policy->on_hit(c, line);
    } else {
        int victim = gcx_cache_pick_victim(c, set); /* never -1: functional mode reserves nothing */
        line = set * c->cfg.ways + (uint32_t)victim;
        uint64_t old;
        int dirty;
        if (gcx_cache_invalidate(c, line, &old, &dirty)) {
            s->evictions++;
            out->evicted = 1;
            out->evicted_line = old;
            if (dirty) {
                s->writebacks++;
                out->writeback = 1;
            }
        }
        gcx_cache_install(c, line, la, sector_bit, cycle);
        c->meta[line].access_count = 1;
    }
    s->fills++;
    out->filled = 1;
    out->line = line;
    if (is_write) {
        if (c->cfg.write_back)
            c->meta[line].dirty |= sector_bit;
        else
            s->write_throughs++;
    }
}

void gcx_cache_run(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n)
{
    if (c->cfg.policy->run)
        c->cfg.policy->run(c, addrs, writes, n);
    else
        gcx_cache_run_hooks(c, addrs, writes, n);
}

void gcx_cache_run_hooks(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n)
{
    gcx_access a;
    uint64_t t0 = c->stats.accesses;
    if (writes) {
        for (size_t i = 0; i < n; i++)
            gcx_cache_access(c, addrs[i], writes[i] != 0, t0 + i, &a);
    } else {
        for (size_t i = 0; i < n; i++)
            gcx_cache_access(c, addrs[i], 0, t0 + i, &a);
    }
}

/* One access of the stamped fast path. Every outcome is computed with arithmetic and
 * conditional moves instead of branches: with a hit rate near one half, a hit/miss branch would
 * be mispredicted on every other access. The one branch kept is "same line as the previous
 * access", which is predictable (streams touch a line many times in a row) and skips the set
 * search, whose result is known: a hit on that line, or a sector miss in it. */
#define GCX_STAMPED_ACCESS(SEARCH)                                                                   \
    do {                                                                                             \
        uint64_t la = a >> c->line_shift;                                                            \
        uint8_t bit = (uint8_t)(1u << gcx_sector_of(c, a));                                          \
        uint32_t line;                                                                               \
        int present;                                                                                 \
        if (la == prev_la) {                                                                         \
            line = prev_line;                                                                        \
            present = 1;                                                                             \
        } else {                                                                                     \
            uint32_t base = gcx_cache_set_of(c, la) * ways, found, victim;                           \
            SEARCH(c->tag + base, c->repl + base, ways, la, &found, &victim);                        \
            present = found != ways;                                                                 \
            line = base + (present ? found : victim);                                                \
        }                                                                                            \
        gcx_line_meta *m = &c->meta[line];                                                           \
        uint8_t valid = m->valid, dirty = m->dirty;                                                  \
        int sector_valid = (valid & bit) != 0;                                                       \
        int hit = present & sector_valid;                                                            \
        s.hits += (uint64_t)hit;                                                                     \
        s.writes += (uint64_t)w;                                                                     \
        if (w & !hit & !write_allocate) {                                                            \
            s.write_misses++;                                                                        \
            s.write_throughs++;                                                                      \
            s.sector_misses += (uint64_t)present; /* not a hit: the sector is missing */             \
            prev_la = GCX_TAG_NONE;                                                                  \
            continue;                                                                                \
        }                                                                                            \
        s.fills += (uint64_t)!hit;                                                                   \
        int evict = !present & (c->tag[line] != GCX_TAG_NONE);                                       \
        s.evictions += (uint64_t)evict;                                                              \
        s.writebacks += (uint64_t)(evict & (dirty != 0));                                            \
        s.sector_misses += (uint64_t)(present & !sector_valid);                                      \
        s.write_misses += (uint64_t)(w & !hit);                                                      \
        s.write_throughs += (uint64_t)(w & !write_back);                                             \
        c->tag[line] = la;                                                                           \
        m->valid = present ? (uint8_t)(valid | bit) : bit;                                           \
        dirty = present ? dirty : 0;                                                                 \
        m->dirty = (w & write_back) ? (uint8_t)(dirty | bit) : dirty;                                \
        int stamp = stamp_on_hit | !present;                                                         \
        clock += (uint32_t)stamp;                                                                    \
        c->repl[line] = stamp ? clock : c->repl[line];                                               \
        m->access_count = present ? m->access_count + 1 : 1;                                         \
        m->fill_cycle = present ? m->fill_cycle : t;                                                 \
        m->last_access = t;                                                                          \
        prev_la = la;                                                                                \
        prev_line = line;                                                                            \
    } while (0)

#define GCX_STAMPED_LOOP(NAME, ATTR, SEARCH)                                                         \
    static ATTR void NAME(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n,      \
                          int stamp_on_hit, gcx_cache_stats *out, uint32_t *clock_io, uint64_t t0)   \
    {                                                                                                \
        const uint32_t ways = c->cfg.ways;                                                           \
        const int write_allocate = c->cfg.write_allocate != 0, write_back = c->cfg.write_back != 0;   \
        gcx_cache_stats s = {0};                                                                     \
        uint32_t clock = *clock_io;                                                                  \
        uint64_t prev_la = GCX_TAG_NONE;                                                                       \
        uint32_t prev_line = 0;                                                                      \
        for (size_t i = 0; i < n; i++) {                                                             \
            uint64_t a = addrs[i], t = t0 + i;                                                       \
            int w = writes ? writes[i] != 0 : 0;                                                     \
            GCX_STAMPED_ACCESS(SEARCH);                                                              \
        }                                                                                            \
        *out = s;                                                                                    \
        *clock_io = clock;                                                                           \
    }

GCX_STAMPED_LOOP(stamped_loop_scalar, , gcx_search_scalar)
#ifdef GCX_HAVE_AVX2_PATH
GCX_STAMPED_LOOP(stamped_loop_avx2, GCX_AVX2, gcx_search_avx2)
#endif

void gcx_cache_renumber_stamps(gcx_cache *c)
{
    uint32_t ways = c->cfg.ways;
    for (uint32_t set = 0; set < c->cfg.sets; set++) {
        uint32_t *r = c->repl + (size_t)set * ways, rank[GCX_MAX_WAYS];
        for (uint32_t a = 0; a < ways; a++) {
            rank[a] = 0;
            if (r[a] == 0)
                continue;
            for (uint32_t b = 0; b < ways; b++)
                rank[a] += r[b] != 0 && r[b] <= r[a];
        }
        for (uint32_t a = 0; a < ways; a++)
            r[a] = rank[a];
    }
    c->repl_clock = ways;
}

/* Chunks of at most this many accesses keep the stamp clock below GCX_STAMP_LIMIT + chunk. */
#define GCX_STAMP_CHUNK (1u << 20)

void gcx_cache_run_stamped(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n, int stamp_on_hit)
{
    gcx_cache_stats s, total = {0};
    for (size_t done = 0; done < n;) {
        size_t chunk = n - done < GCX_STAMP_CHUNK ? n - done : GCX_STAMP_CHUNK;
        if (c->repl_clock >= GCX_STAMP_LIMIT)
            gcx_cache_renumber_stamps(c);
        uint32_t clock = c->repl_clock;
        const uint8_t *w = writes ? writes + done : NULL;
#ifdef GCX_HAVE_AVX2_PATH
        if (c->cfg.ways % 4 == 0 && __builtin_cpu_supports("avx2"))
            stamped_loop_avx2(c, addrs + done, w, chunk, stamp_on_hit, &s, &clock, c->stats.accesses + done);
        else
#endif
            stamped_loop_scalar(c, addrs + done, w, chunk, stamp_on_hit, &s, &clock, c->stats.accesses + done);
        c->repl_clock = clock;
#define GCX_X(name, doc) total.name += s.name;
        GCX_CACHE_STATS(GCX_X)
#undef GCX_X
        done += chunk;
    }
    s = total;
    /* Derive the remaining counters from the ones kept in the loop. */
    gcx_cache_stats *st = &c->stats;
    uint64_t misses = n - s.hits;
    st->accesses += n;
    st->writes += s.writes;
    st->reads += n - s.writes;
    st->hits += s.hits;
    st->misses += misses;
    st->write_misses += s.write_misses;
    st->read_misses += misses - s.write_misses;
    st->sector_misses += s.sector_misses;
    st->fills += s.fills;
    st->evictions += s.evictions;
    st->writebacks += s.writebacks;
    st->write_throughs += s.write_throughs;
}

/* Unit tests of the cache core and its replacement policies, in plain C: hand-worked traces
 * per policy, the fast paths against the hook path, geometry edge cases and validation. */
#include <stdlib.h>

#include "cache/cache.h"
#include "check.h"
#include "policies/policies.h"

static gcx_cache_config make_config(uint32_t sets, uint32_t ways, uint32_t line, const char *policy)
{
    gcx_cache_config cfg = {
        .sets = sets, .ways = ways, .line_bytes = line, .write_back = 1, .write_allocate = 1,
        .policy = gcx_policy_find(policy),
    };
    gcx_policy_defaults(cfg.policy, cfg.policy_params);
    return cfg;
}

static gcx_cache_stats run_lines(const gcx_cache_config *cfg, const uint64_t *lines, const uint8_t *writes, size_t n)
{
    gcx_cache c;
    gcx_error err;
    uint64_t addrs[64];
    CHECK(n <= 64);
    for (size_t i = 0; i < n; i++)
        addrs[i] = lines[i] * cfg->line_bytes;
    CHECK_EQ(gcx_cache_init(&c, cfg, &err), GCX_OK);
    gcx_cache_run(&c, addrs, writes, n);
    gcx_cache_stats s = c.stats;
    gcx_cache_free(&c);
    return s;
}

static void test_fastmod_matches_modulo(void)
{
    gcx_rng r;
    gcx_rng_seed(&r, 7);
    uint64_t divisors[] = {1, 2, 3, 5, 7, 24, 96, 384, 1000, 4095, 65537, 0xFFFFFFFFull, 0x100000001ull};
    for (size_t d = 0; d < sizeof divisors / sizeof *divisors; d++) {
        unsigned __int128 magic = ~(unsigned __int128)0 / divisors[d] + 1;
        for (int i = 0; i < 20000; i++) {
            uint64_t a = gcx_rng_next(&r) >> (i % 64);
            CHECK_EQ(gcx_fastmod_u64(a, magic, divisors[d]), a % divisors[d]);
        }
        CHECK_EQ(gcx_fastmod_u64(UINT64_MAX, magic, divisors[d]), UINT64_MAX % divisors[d]);
        CHECK_EQ(gcx_fastmod_u64(0, magic, divisors[d]), 0);
    }
}

/* One fully associative set of two 64 B lines; lines A=0, B=1, C=2.
 * LRU:  A miss, B miss, A hit, C miss (evicts B), B miss (evicts A), A miss (evicts C).
 * FIFO: A miss, B miss, A hit, C miss (evicts A, the first in), B hit, A miss (evicts B). */
static void test_lru_hand_trace(void)
{
    uint64_t lines[] = {0, 1, 0, 2, 1, 0};
    gcx_cache_config cfg = make_config(1, 2, 64, "lru");
    gcx_cache_stats s = run_lines(&cfg, lines, NULL, 6);
    CHECK_EQ(s.accesses, 6);
    CHECK_EQ(s.hits, 1);
    CHECK_EQ(s.misses, 5);
    CHECK_EQ(s.evictions, 3);
    CHECK_EQ(s.fills, 5);
}

static void test_fifo_hand_trace(void)
{
    uint64_t lines[] = {0, 1, 0, 2, 1, 0};
    gcx_cache_config cfg = make_config(1, 2, 64, "fifo");
    gcx_cache_stats s = run_lines(&cfg, lines, NULL, 6);
    CHECK_EQ(s.hits, 2);
    CHECK_EQ(s.misses, 4);
    CHECK_EQ(s.evictions, 2);
}

/* Jaleel et al. (ISCA 2010) motivate SRRIP with a mixed pattern: a reused pair a1 a2 followed
 * by a scan b1..b4 on a 4-entry set. With 2-bit RRPVs and hit priority:
 *   a1, a2 fill at RRPV 2; their hits set 0; b1, b2 fill the free ways at 2;
 *   b3: no RRPV 3, age all (a 1,1; b 3,3), evict b1; b4: evict b2 (RRPV 3);
 *   a1, a2 hit. Hits 4 of 10. LRU evicts a2 and a1 during the scan and hits only 2. */
static void test_srrip_paper_example(void)
{
    uint64_t lines[] = {1, 2, 2, 1, 11, 12, 13, 14, 1, 2};
    gcx_cache_config cfg = make_config(1, 4, 64, "srrip");
    gcx_cache_stats s = run_lines(&cfg, lines, NULL, 10);
    CHECK_EQ(s.hits, 4);
    CHECK_EQ(s.evictions, 2);
    cfg = make_config(1, 4, 64, "lru");
    s = run_lines(&cfg, lines, NULL, 10);
    CHECK_EQ(s.hits, 2);
    CHECK_EQ(s.evictions, 4);
}

static void test_srrip_state_after_scan(void)
{
    gcx_cache c;
    gcx_error err;
    gcx_cache_config cfg = make_config(1, 4, 64, "srrip");
    uint64_t lines[] = {1, 2, 2, 1, 11, 12, 13, 14};
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
    for (int i = 0; i < 8; i++) {
        gcx_access a;
        gcx_cache_access(&c, lines[i] * 64, 0, (uint64_t)i, &a);
    }
    /* Ways: a1 (RRPV 1), a2 (1), b3 (2), b4 (2). */
    CHECK_EQ(c.tag[0], 1);
    CHECK_EQ(c.tag[1], 2);
    CHECK_EQ(c.tag[2], 13);
    CHECK_EQ(c.tag[3], 14);
    CHECK_EQ(c.repl[0], 1);
    CHECK_EQ(c.repl[1], 1);
    CHECK_EQ(c.repl[2], 2);
    CHECK_EQ(c.repl[3], 2);
    gcx_cache_free(&c);
}

/* Random: every victim is a valid candidate, and the seed alone fixes the outcome. */
static void test_random_seeded(void)
{
    uint64_t addrs[400];
    for (int i = 0; i < 400; i++)
        addrs[i] = (uint64_t)((i * 7919) % 13) * 64;
    gcx_cache a, b, d;
    gcx_error err;
    gcx_cache_config cfg = make_config(1, 4, 64, "random");
    cfg.seed = 11;
    CHECK_EQ(gcx_cache_init(&a, &cfg, &err), GCX_OK);
    CHECK_EQ(gcx_cache_init(&b, &cfg, &err), GCX_OK);
    cfg.seed = 12;
    CHECK_EQ(gcx_cache_init(&d, &cfg, &err), GCX_OK);
    gcx_cache_run(&a, addrs, NULL, 400);
    gcx_cache_run(&b, addrs, NULL, 400);
    gcx_cache_run(&d, addrs, NULL, 400);
    CHECK_EQ(a.stats.hits, b.stats.hits);
    CHECK(memcmp(a.tag, b.tag, 4 * sizeof *a.tag) == 0);
    CHECK(a.stats.hits != d.stats.hits || memcmp(a.tag, d.tag, 4 * sizeof *a.tag) != 0);
    CHECK(a.stats.hits > 0 && a.stats.hits < 400);
    gcx_cache_free(&a);
    gcx_cache_free(&b);
    gcx_cache_free(&d);
}

/* Write-back + allocate on one 1-way set: W A (miss, dirty), R B (miss, A written back),
 * W B (hit, dirty), R A (miss, B written back). */
static void test_write_back_allocate(void)
{
    uint64_t lines[] = {0, 1, 1, 0};
    uint8_t writes[] = {1, 0, 1, 0};
    gcx_cache_config cfg = make_config(1, 1, 128, "lru");
    gcx_cache_stats s = run_lines(&cfg, lines, writes, 4);
    CHECK_EQ(s.hits, 1);
    CHECK_EQ(s.evictions, 2);
    CHECK_EQ(s.writebacks, 2);
    CHECK_EQ(s.write_throughs, 0);
    CHECK_EQ(s.writes, 2);
    CHECK_EQ(s.write_misses, 1);
    CHECK_EQ(s.read_misses, 2);
}

/* Write-through + no-allocate: W A (miss, forwarded, not allocated), R A (miss, filled),
 * W A (hit, forwarded), R B (miss, A evicted clean: no writeback). */
static void test_write_through_no_allocate(void)
{
    uint64_t lines[] = {0, 0, 0, 1};
    uint8_t writes[] = {1, 0, 1, 0};
    for (int p = 0; p < 2; p++) {
        gcx_cache_config cfg = make_config(1, 1, 128, p ? "fifo" : "srrip");
        cfg.write_back = 0;
        cfg.write_allocate = 0;
        gcx_cache_stats s = run_lines(&cfg, lines, writes, 4);
        CHECK_EQ(s.hits, 1);
        CHECK_EQ(s.misses, 3);
        CHECK_EQ(s.fills, 2);
        CHECK_EQ(s.write_throughs, 2);
        CHECK_EQ(s.evictions, 1);
        CHECK_EQ(s.writebacks, 0);
    }
}

/* Three sets (not a power of two): lines 0, 3 and 6 share set 0; line 1 is alone in set 1. */
static void test_non_power_of_two_sets(void)
{
    uint64_t lines[] = {0, 3, 0, 1, 1, 6};
    gcx_cache_config cfg = make_config(3, 1, 64, "lru");
    gcx_cache_stats s = run_lines(&cfg, lines, NULL, 6);
    CHECK_EQ(s.hits, 1);
    CHECK_EQ(s.evictions, 3);
}

/* 128 B lines of four 32 B sectors: byte 0 (miss), 32 (sector miss), 8 (hit), 40 (hit),
 * 128 (miss, evicts the line). */
static void test_sectors(void)
{
    uint64_t addrs[] = {0, 32, 8, 40, 128};
    gcx_cache c;
    gcx_error err;
    gcx_cache_config cfg = make_config(1, 1, 128, "lru");
    cfg.sector_bytes = 32;
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
    gcx_cache_run(&c, addrs, NULL, 5);
    CHECK_EQ(c.stats.hits, 2);
    CHECK_EQ(c.stats.misses, 3);
    CHECK_EQ(c.stats.sector_misses, 1);
    CHECK_EQ(c.stats.fills, 3);
    CHECK_EQ(c.stats.evictions, 1);
    CHECK_EQ(c.meta[0].valid, 1);
    gcx_cache_free(&c);
}

/* A no-allocate write to a present line's missing sector is a sector miss like any other: read
 * byte 0 (miss), write byte 32 (sector miss, not allocated), read byte 32 (sector miss again). Both
 * the LRU fast path and SRRIP's hook path. */
static void test_no_allocate_write_sector_miss(void)
{
    uint64_t addrs[] = {0, 32, 32};
    uint8_t writes[] = {0, 1, 0};
    for (int p = 0; p < 2; p++) {
        gcx_cache c;
        gcx_error err;
        gcx_cache_config cfg = make_config(1, 1, 128, p ? "srrip" : "lru");
        cfg.sector_bytes = 32;
        cfg.write_allocate = 0;
        CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
        gcx_cache_run(&c, addrs, writes, 3);
        CHECK_EQ(c.stats.misses, 3);
        CHECK_EQ(c.stats.write_misses, 1);
        CHECK_EQ(c.stats.sector_misses, 2);
        CHECK_EQ(c.stats.write_throughs, 1);
        CHECK_EQ(c.stats.fills, 2);
        CHECK_EQ(c.meta[0].valid, 3); /* sectors 0 and 1: the write did not allocate */
        gcx_cache_free(&c);
    }
    /* And the access reports it; a write to an absent line is a plain miss. */
    gcx_cache c;
    gcx_error err;
    gcx_access a;
    gcx_cache_config cfg = make_config(1, 1, 128, "lru");
    cfg.sector_bytes = 32;
    cfg.write_allocate = 0;
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
    gcx_cache_access(&c, 256, 1, 0, &a);
    CHECK(!a.hit && !a.sector_miss && !a.filled);
    gcx_cache_access(&c, 0, 0, 1, &a);
    gcx_cache_access(&c, 64, 1, 2, &a);
    CHECK(!a.hit && a.sector_miss && !a.filled);
    CHECK_EQ(c.stats.sector_misses, 1);
    gcx_cache_free(&c);
}

static void test_line_metadata(void)
{
    uint64_t addrs[] = {0, 64, 0, 0};
    gcx_cache c;
    gcx_error err;
    gcx_cache_config cfg = make_config(1, 2, 64, "lru");
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
    gcx_cache_run(&c, addrs, NULL, 4);
    CHECK_EQ(c.meta[0].access_count, 3);
    CHECK_EQ(c.meta[0].fill_cycle, 0);
    CHECK_EQ(c.meta[0].last_access, 3);
    CHECK_EQ(c.meta[1].access_count, 1);
    CHECK_EQ(c.meta[1].fill_cycle, 1);
    CHECK_EQ(c.meta[0].state, GCX_LINE_ON);
    gcx_cache_free(&c);
}

static void test_reserved_lines_are_not_victims(void)
{
    gcx_cache c;
    gcx_error err;
    gcx_cache_config cfg = make_config(2, 4, 64, "lru");
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_OK);
    for (uint32_t w = 0; w < 4; w++) {
        gcx_cache_install(&c, w, 10 + w * 2, 1, w);
        c.meta[w].reserved = 1;
    }
    CHECK_EQ(gcx_cache_pick_victim(&c, 0), -1);
    c.meta[2].reserved = 0;
    CHECK_EQ(gcx_cache_pick_victim(&c, 0), 2);
    CHECK_EQ(gcx_cache_pick_victim(&c, 1), 0); /* set 1 is empty: first invalid way */
    gcx_cache_free(&c);
}

/* Compare two caches field by field. */
static void check_same_state(const gcx_cache *a, const gcx_cache *b)
{
#define GCX_X(name, doc) CHECK_EQ(a->stats.name, b->stats.name);
    GCX_CACHE_STATS(GCX_X)
#undef GCX_X
    int same = 1;
    for (uint32_t i = 0; i < a->n_lines; i++) {
        same &= a->tag[i] == b->tag[i] && a->repl[i] == b->repl[i] && a->meta[i].valid == b->meta[i].valid &&
                a->meta[i].dirty == b->meta[i].dirty && a->meta[i].access_count == b->meta[i].access_count &&
                a->meta[i].last_access == b->meta[i].last_access && a->meta[i].fill_cycle == b->meta[i].fill_cycle;
    }
    CHECK(same);
}

/* The LRU and FIFO fast paths must leave exactly what the hook path leaves. */
static void test_fast_path_equals_hooks(void)
{
    gcx_rng r;
    gcx_rng_seed(&r, 3);
    size_t n = 20000;
    uint64_t *addrs = malloc(n * sizeof *addrs);
    uint8_t *writes = malloc(n);
    const char *policies[] = {"lru", "fifo"};
    uint32_t geometries[][3] = {{1, 1, 32}, {3, 2, 64}, {32, 4, 128}, {5, 8, 128}, {64, 16, 64}, {7, 12, 256},
                                {2, 64, 32}, {100, 3, 128}};
    for (size_t g = 0; g < sizeof geometries / sizeof *geometries; g++) {
        for (int p = 0; p < 2; p++) {
            for (int variant = 0; variant < 4; variant++) {
                gcx_cache_config cfg = make_config(geometries[g][0], geometries[g][1], geometries[g][2], policies[p]);
                cfg.write_back = variant & 1;
                cfg.write_allocate = (variant >> 1) & 1;
                cfg.sector_bytes = (g % 2) ? 32 : 0;
                if (cfg.sector_bytes > cfg.line_bytes / 1)
                    cfg.sector_bytes = 0;
                cfg.index_fn = (int)(g % 3 == 2);
                uint64_t footprint = (uint64_t)cfg.sets * cfg.ways * cfg.line_bytes * 3;
                for (size_t i = 0; i < n; i++) {
                    addrs[i] = (i % 3 == 0 && i) ? addrs[i - 1] + 4 : gcx_rng_next(&r) % footprint;
                    writes[i] = (gcx_rng_next(&r) % 4) == 0;
                }
                gcx_cache fast, hooks;
                gcx_error err;
                CHECK_EQ(gcx_cache_init(&fast, &cfg, &err), GCX_OK);
                CHECK_EQ(gcx_cache_init(&hooks, &cfg, &err), GCX_OK);
                gcx_cache_run(&fast, addrs, writes, n / 2);
                gcx_cache_run(&fast, addrs + n / 2, writes + n / 2, n - n / 2);
                gcx_cache_run_hooks(&hooks, addrs, writes, n);
                check_same_state(&fast, &hooks);
                gcx_cache_free(&fast);
                gcx_cache_free(&hooks);
            }
        }
    }
    free(addrs);
    free(writes);
}

/* Renumbering stamps before the 32-bit clock wraps changes no decision. */
static void test_stamp_renumbering(void)
{
    gcx_rng r;
    gcx_rng_seed(&r, 5);
    size_t n = 5000;
    uint64_t *addrs = malloc(n * sizeof *addrs);
    for (size_t i = 0; i < n; i++)
        addrs[i] = (gcx_rng_next(&r) % 200) * 64;
    const char *policies[] = {"lru", "fifo"};
    for (int p = 0; p < 2; p++) {
        for (int hooks = 0; hooks < 2; hooks++) {
            gcx_cache_config cfg = make_config(4, 8, 64, policies[p]);
            gcx_cache a, b;
            gcx_error err;
            CHECK_EQ(gcx_cache_init(&a, &cfg, &err), GCX_OK);
            CHECK_EQ(gcx_cache_init(&b, &cfg, &err), GCX_OK);
            void (*run)(gcx_cache *, const uint64_t *, const uint8_t *, size_t) =
                hooks ? gcx_cache_run_hooks : gcx_cache_run;
            run(&a, addrs, NULL, 1000);
            run(&b, addrs, NULL, 1000);
            /* Move b's stamps near the limit, order kept, so the rest of the run renumbers. */
            for (uint32_t i = 0; i < b.n_lines; i++)
                if (b.repl[i])
                    b.repl[i] += GCX_STAMP_LIMIT - 2000;
            b.repl_clock += GCX_STAMP_LIMIT - 2000;
            run(&a, addrs + 1000, NULL, n - 1010);
            run(&b, addrs + 1000, NULL, n - 1010);
            /* The fast path checks the clock between calls (and every 2^20 accesses). */
            run(&a, addrs + n - 10, NULL, 10);
            run(&b, addrs + n - 10, NULL, 10);
            CHECK(b.repl_clock < 10000); /* it was renumbered */
            CHECK_EQ(a.stats.hits, b.stats.hits);
            CHECK_EQ(a.stats.evictions, b.stats.evictions);
            CHECK(memcmp(a.tag, b.tag, a.n_lines * sizeof *a.tag) == 0);
            gcx_cache_free(&a);
            gcx_cache_free(&b);
        }
    }
    free(addrs);
}

static void test_config_validation(void)
{
    gcx_error err;
    gcx_cache c;
    gcx_cache_config cfg = make_config(0, 4, 128, "lru");
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "sets") != NULL);
    cfg = make_config(4, 65, 128, "lru");
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "ways") != NULL);
    cfg = make_config(4, 4, 96, "lru");
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "line_bytes") != NULL);
    cfg = make_config(4, 4, 128, "lru");
    cfg.sector_bytes = 48;
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "sector_bytes") != NULL);
    cfg.sector_bytes = 8; /* 16 sectors */
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    cfg = make_config(4, 4, 128, "srrip");
    cfg.policy_params[0] = 9;
    CHECK_EQ(gcx_cache_init(&c, &cfg, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "rrpv_bits") != NULL);
    CHECK(gcx_policy_find("belady") == NULL);
}

int main(void)
{
    RUN(test_fastmod_matches_modulo);
    RUN(test_lru_hand_trace);
    RUN(test_fifo_hand_trace);
    RUN(test_srrip_paper_example);
    RUN(test_srrip_state_after_scan);
    RUN(test_random_seeded);
    RUN(test_write_back_allocate);
    RUN(test_write_through_no_allocate);
    RUN(test_non_power_of_two_sets);
    RUN(test_sectors);
    RUN(test_no_allocate_write_sector_miss);
    RUN(test_line_metadata);
    RUN(test_reserved_lines_are_not_victims);
    RUN(test_fast_path_equals_hooks);
    RUN(test_stamp_renumbering);
    RUN(test_config_validation);
    return CHECK_SUMMARY();
}

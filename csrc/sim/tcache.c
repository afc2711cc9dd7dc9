/* A cache of the timing model: the set-associative cache plus the line-state layer. Residency in
 * each power state, dead time and access statistics are updated on events (access, fill, drop,
 * state change), never per cycle: a line's time in a state is added when it leaves the state. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_tcache_init(gcx_tcache *tc, const gcx_cache_config *cc, int level, uint32_t id, gcx_error *err)
{
    memset(tc, 0, sizeof *tc);
    int rc = gcx_cache_init(&tc->c, cc, err);
    if (rc)
        return rc;
    size_t n = tc->c.n_lines;
    tc->level = level;
    tc->id = id;
    tc->mshr_of = malloc(n * sizeof *tc->mshr_of);
    tc->since = calloc(n, sizeof *tc->since);
    tc->resid = calloc(n, sizeof *tc->resid);
    tc->empty_since = calloc(n, sizeof *tc->empty_since);
    tc->word_valid = calloc(n, sizeof *tc->word_valid);
    tc->word_dirty = calloc(n, sizeof *tc->word_dirty);
    tc->lifetime_accesses = calloc(n, sizeof *tc->lifetime_accesses);
    if (!tc->mshr_of || !tc->since || !tc->resid || !tc->empty_since || !tc->word_valid || !tc->word_dirty ||
        !tc->lifetime_accesses) {
        gcx_tcache_free(tc);
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for a cache of %zu lines", n);
    }
    for (size_t i = 0; i < n; i++)
        tc->mshr_of[i] = GCX_NONE;
    return GCX_OK;
}

void gcx_tcache_free(gcx_tcache *tc)
{
    gcx_cache_free(&tc->c);
    free(tc->mshr_of);
    free(tc->since);
    free(tc->resid);
    free(tc->empty_since);
    free(tc->word_valid);
    free(tc->word_dirty);
    free(tc->lifetime_accesses);
    memset(tc, 0, sizeof *tc);
}

void gcx_tcache_set_state(gcx_tcache *tc, uint32_t line, int state, uint64_t when)
{
    gcx_line_meta *m = &tc->c.meta[line];
    if (m->state == state)
        return;
    /* Techniques may place a transition in the past (ideal gating powers a line off at its last
     * access), but never before the current state began. */
    if (when < tc->since[line])
        when = tc->since[line];
    tc->resid[line][m->state] += when - tc->since[line];
    tc->since[line] = when;
    m->state = (uint8_t)state;
}

static inline uint32_t popcount_folded(uint64_t words, int group)
{
    /* Segments of `group` 4-byte words touched: OR each group's bits into its lowest bit. */
    uint64_t w = words;
    for (int s = 1; s < group; s <<= 1)
        w |= w >> s;
    uint64_t pick = 0;
    for (int i = 0; i < 64; i += group)
        pick |= 1ull << i;
    return (uint32_t)gcx_popcount64(w & pick);
}

uint32_t gcx_sector_mask_of_words(uint64_t words, uint32_t line_bytes, uint32_t sector_bytes)
{
    uint32_t per = sector_bytes / 4, n = line_bytes / sector_bytes, mask = 0;
    uint64_t group = per >= 64 ? ~0ull : (1ull << per) - 1;
    for (uint32_t s = 0; s < n; s++)
        if ((words >> (s * per)) & group)
            mask |= 1u << s;
    return mask;
}

static inline uint32_t bucket_interval(uint64_t d)
{
    if (d == 0)
        return 0;
    uint32_t b = 1 + gcx_log2(d);
    return b < GCX_HIST_INTERVAL ? b : GCX_HIST_INTERVAL - 1;
}

/* An access's statistics; `reorder`: it also counts as a use for the replacement policy. */
static void note_access(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int is_write, int reorder)
{
    gcx_line_meta *m = &tc->c.meta[line];
    gcx_tcache_stats *s = &tc->s;
    /* An inter-access interval (Atoofian and Manzak, Fig. 4) is between two consecutive accesses to
     * the same block while it stays in the line, the idle time a drowsy line could sleep through: the
     * first access of a residency pairs with nothing, neither with the fill nor with an access to the
     * line's previous block, nor with one to the same block before it left (a refill, or data a power
     * technique dropped with its tag kept: the block was not in the cache in between). */
    if (m->access_count) {
        uint64_t d = now >= m->last_access ? now - m->last_access : 0;
        tc->hist_interval[bucket_interval(d)]++;
        s->interval_sum += d;
        s->interval_count++;
    }
    tc->lifetime_accesses[line]++;
    if (reorder)
        gcx_cache_touch(&tc->c, line, now);
    else
        gcx_cache_note_use(&tc->c, line, now);
    uint64_t words = r->words;
    uint32_t sector_words = 32 / 4;
    uint32_t sectors = (uint32_t)popcount_folded(words, (int)sector_words);
    /* A sector larger than 32 bytes is read or written whole (energy charges it so). */
    uint32_t own_bytes = tc->c.cfg.sector_bytes ? tc->c.cfg.sector_bytes : tc->c.cfg.line_bytes;
    uint64_t units = (uint64_t)popcount_folded(words, (int)(own_bytes / 4)) * (own_bytes / 32);
    s->data_accesses++;
    s->words_touched += (uint64_t)gcx_popcount64(words);
    s->segments8 += popcount_folded(words, 2);
    s->segments16 += popcount_folded(words, 4);
    s->segments32 += sectors;
    s->lanes_sum += r->lanes;
    if (is_write) {
        s->data_writes++;
        s->write_sectors += sectors;
        s->write_units += units;
        s->write_words_touched += (uint64_t)gcx_popcount64(words);
        s->write_segments8 += popcount_folded(words, 2);
        s->write_segments16 += popcount_folded(words, 4);
        s->write_lanes_sum += r->lanes;
    } else {
        s->data_reads++;
        s->read_sectors += sectors;
        s->read_units += units;
    }
}

void gcx_tcache_note_access(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int is_write)
{
    note_access(tc, line, r, now, is_write, 1);
}

/* An access whose use of the line the replacement order has already had: a request a fill answers
 * (GPGPU-Sim's tag array takes a line's recency from its allocation, the miss, and from hits,
 * including requests that merge into the fetch, HIT_RESERVED, but not from the fill), or the write
 * that installed the line (its insertion). SRRIP keeps its insertion value until a re-reference. */
void gcx_tcache_note_access_in_order(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int is_write)
{
    note_access(tc, line, r, now, is_write, 0);
}

void gcx_tcache_note_new_data(gcx_tcache *tc, uint32_t line, uint64_t now)
{
    gcx_line_meta *m = &tc->c.meta[line];
    if (m->valid == 0 && tc->word_valid[line] == 0) {
        /* A new residency begins: the line held nothing since it was emptied (an L2 line being
         * fetched may already hold words a store put there: its residency began with them). Its
         * access count restarts even when the tag stayed (the same block refilled). */
        tc->s.dead_nodata += now - tc->empty_since[line];
        m->fill_cycle = now;
        m->last_access = now;
        m->access_count = 0;
    }
}

void gcx_tcache_note_fill(gcx_tcache *tc, uint32_t line, uint64_t now, uint8_t sectors)
{
    tc->s.fills++;
    tc->s.fill_sectors += (uint64_t)gcx_popcount64(sectors) * (tc->c.cfg.sector_bytes / 32 ? tc->c.cfg.sector_bytes / 32 : 1);
    gcx_tcache_note_new_data(tc, line, now);
}

void gcx_tcache_note_drop(gcx_tcache *tc, uint32_t line, uint64_t now)
{
    gcx_line_meta *m = &tc->c.meta[line];
    if (m->valid == 0)
        return;
    /* A power technique may place the loss in the past (decay: at the decay cycle, found at a later
     * lookup), but never before the line's last use. */
    if (now < m->last_access)
        now = m->last_access;
    tc->s.live_cycles += m->last_access - m->fill_cycle;
    tc->s.dead_unused += now - m->last_access;
    tc->empty_since[line] = now;
}

void gcx_tcache_finish(gcx_tcache *tc, uint64_t now)
{
    for (uint32_t line = 0; line < tc->c.n_lines; line++) {
        gcx_line_meta *m = &tc->c.meta[line];
        if (m->valid) {
            tc->s.live_cycles += m->last_access - m->fill_cycle;
            tc->s.dead_unused += now - m->last_access;
        } else {
            tc->s.dead_nodata += now - tc->empty_since[line];
        }
        if (now > tc->since[line])
            tc->resid[line][m->state] += now - tc->since[line];
        tc->since[line] = now;
        tc->s.resid_on += tc->resid[line][GCX_LINE_ON];
        tc->s.resid_drowsy += tc->resid[line][GCX_LINE_DROWSY];
        tc->s.resid_off += tc->resid[line][GCX_LINE_OFF];
        uint32_t a = tc->lifetime_accesses[line];
        uint32_t b = a == 0 ? 0 : a == 1 ? 1 : 1 + gcx_log2(a);
        tc->hist_access[b < GCX_HIST_ACCESS ? b : GCX_HIST_ACCESS - 1]++;
    }
}

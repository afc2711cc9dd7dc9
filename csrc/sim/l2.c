/* An L2 sub-partition: a slice of the L2 serving the addresses interleaved to it. Write-back and
 * write-allocate with lazy fetch on read (a write allocates the line and records which 4-byte
 * words it holds without reading DRAM; a read that needs other words fetches them), MSHRs that
 * merge misses to a line being fetched, a hit latency, and a bounded number of requests in
 * flight. Requests it cannot take wait in the crossbar buffer, which back-pressures the SMs. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

uint32_t gcx_l2_partition_of(const gcx_gpu *g, uint64_t addr)
{
    return (uint32_t)(gcx_l2_chunk(g, addr) % (uint64_t)g->cfg.l2_partitions);
}

/* The address with the partition-selecting bits removed: consecutive within a partition, so that
 * every set of the slice is used. */
static inline uint64_t local_addr(const gcx_gpu *g, uint64_t addr)
{
    uint64_t il = (uint64_t)g->cfg.l2_interleave_bytes;
    return gcx_l2_chunk(g, addr) / (uint64_t)g->cfg.l2_partitions * il + addr % il;
}

static inline uint32_t channel_of(const gcx_gpu *g, uint32_t p) { return p / g->l2_per_channel; }

int gcx_l2_init(gcx_gpu *g, uint32_t p, gcx_error *err)
{
    const gcx_gpu_config *c = &g->cfg;
    gcx_l2 *l2 = &g->l2[p];
    gcx_cache_config cc = {
        .sets = g->l2_sets,
        .ways = (uint32_t)c->l2_ways,
        .line_bytes = (uint32_t)c->l2_line_bytes,
        .sector_bytes = (uint32_t)c->l2_sector_bytes,
        .index_fn = GCX_INDEX_MOD,
        .write_back = 1,
        .write_allocate = 1,
        .policy = gcx_policies[c->l2_policy],
        .seed = g->seed ^ (0x51ull * (p + 1)),
    };
    memcpy(cc.policy_params, c->policy_param[1][c->l2_policy], sizeof cc.policy_params);
    int rc = gcx_tcache_init(&l2->tc, &cc, 2, p, err);
    if (rc)
        return rc;
    l2->tc.power = &g->tech[GCX_TECH_L2_POWER];
    if (gcx_mshr_init(&l2->mshr, (uint32_t)c->l2_mshr_entries, (uint32_t)c->l2_mshr_merge) != GCX_OK)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for L2 MSHRs");
    l2->reply_q.cap = UINT32_MAX;
    l2->fill_q.cap = UINT32_MAX;
    return GCX_OK;
}

void gcx_l2_free(gcx_l2 *l2)
{
    gcx_tcache_free(&l2->tc);
    gcx_mshr_free(&l2->mshr);
    memset(l2, 0, sizeof *l2);
}

static inline uint32_t set_of(const gcx_gpu *g, const gcx_cache *c, uint64_t addr)
{
    uint64_t local_line = local_addr(g, addr) >> c->line_shift;
    if (g->cfg.l2_index == GCX_INDEX_CHOICE_XOR)
        local_line ^= (local_line >> c->xor_shift) ^ (local_line >> (2 * c->xor_shift));
    return (uint32_t)(c->sets_pow2 ? local_line & c->set_mask : gcx_fastmod_u64(local_line, c->set_magic, c->cfg.sets));
}

/* Cache sectors holding any valid word: on the L2, `valid` says which sectors hold data, and
 * reads check the exact words in word_valid (lazy fetch on read). */
static inline uint8_t data_sectors(const gcx_cache *c, uint64_t words)
{
    uint32_t per = c->cfg.sector_bytes / 4;
    uint64_t group = per >= 64 ? ~0ull : (1ull << per) - 1;
    uint8_t out = 0;
    for (uint32_t s = 0; s < c->sectors_per_line; s++)
        if ((words >> (s * per)) & group)
            out |= (uint8_t)(1u << s);
    return out;
}

/* Words a fetch must bring: whole cache sectors covering the words needed and not yet valid. */
static inline uint8_t fetch_sectors32(const gcx_cache *c, uint64_t missing_words)
{
    uint32_t per32 = c->cfg.sector_bytes / 32, per_w = c->cfg.sector_bytes / 4;
    uint64_t group = per_w >= 64 ? ~0ull : (1ull << per_w) - 1;
    uint8_t out = 0;
    for (uint32_t s = 0; s < c->sectors_per_line; s++)
        if ((missing_words >> (s * per_w)) & group)
            out |= (uint8_t)(((1u << per32) - 1) << (s * per32));
    return out;
}

static void reply(gcx_gpu *g, gcx_l2 *l2, gcx_req *r, uint64_t when)
{
    l2->in_flight++;
    gcx_q_insert_sorted(&l2->reply_q, r, when);
}

/* A store whose warp waits for an acknowledgement (core.store_acks); writebacks never do. */
static inline int wants_ack(const gcx_req *r) { return r->type == GCX_REQ_WRITE && r->load != GCX_NONE; }

/* A write is done at the L2: a store is acknowledged once it has passed the L2's pipeline, as
 * GPGPU-Sim's L2 answers a write with a WRITE_ACK when it accesses the cache; other writes end here. */
static void retire(gcx_gpu *g, gcx_l2 *l2, gcx_req *r, uint64_t when)
{
    if (wants_ack(r))
        reply(g, l2, r, when);
    else
        gcx_req_free(g, r);
}

static void dram_write(gcx_gpu *g, uint32_t p, uint64_t addr, uint8_t sectors32, uint64_t now, int is_writeback)
{
    gcx_req *w = gcx_req_new(g);
    w->addr = addr;
    w->sectors = sectors32;
    w->words = gcx_words_of_sectors(sectors32);
    w->type = GCX_REQ_WRITEBACK;
    w->flags = 0;
    w->home = p;
    w->load = GCX_NONE;
    w->line = GCX_NONE;
    w->tech[0] = w->tech[1] = -1;
    if (is_writeback)
        g->l2[p].tc.s.writebacks++;
    gcx_dram_push(g, channel_of(g, p), w, now);
}

/* Drop a line's data (eviction or power-off), writing dirty data to DRAM now. The data was lost at
 * `lost` (a decay cycle, which a lazy switch-off finds later; else now): its residency ends then. */
static void drop_at(gcx_gpu *g, uint32_t p, uint32_t line, uint64_t lost, uint64_t now)
{
    gcx_tcache *tc = &g->l2[p].tc;
    gcx_cache *c = &tc->c;
    gcx_tech *pw = tc->power;
    if (c->meta[line].valid || tc->word_valid[line]) {
        if (pw->ops && pw->ops->line_evict)
            pw->ops->line_evict(pw, tc, line, lost);
        if (c->meta[line].dirty) {
            /* A sectored line writes back only the 32-byte sectors holding written words, as
             * GPGPU-Sim's sector cache writes back its modified sectors; clean sectors fetched
             * from DRAM stay out. An unsectored line writes back every sector holding data (all
             * of a fetched line; only the written ones of a line a store allocated). */
            uint64_t words = c->sectors_per_line > 1 ? tc->word_dirty[line] : tc->word_valid[line];
            uint8_t s32 = (uint8_t)gcx_sector_mask_of_words(words, c->cfg.line_bytes, 32);
            dram_write(g, p, c->tag[line] << c->line_shift, s32, now, 1);
        }
    }
    gcx_tcache_note_drop(tc, line, lost);
    tc->word_valid[line] = 0;
    tc->word_dirty[line] = 0;
}

static inline void drop(gcx_gpu *g, uint32_t p, uint32_t line, uint64_t now) { drop_at(g, p, line, now, now); }

uint32_t gcx_l2_find_line(const gcx_gpu *g, uint32_t p, uint64_t addr)
{
    const gcx_cache *c = &g->l2[p].tc.c;
    uint32_t set = set_of(g, c, addr);
    int way = gcx_cache_find(c, set, addr >> c->line_shift);
    return way >= 0 ? set * c->cfg.ways + (uint32_t)way : GCX_NONE;
}

int gcx_l2_power_off(gcx_gpu *g, gcx_tcache *tc, uint32_t line, uint64_t lost, uint64_t now, int keep_tag)
{
    uint32_t p = tc->id;
    gcx_cache *c = &tc->c;
    if (c->tag[line] == GCX_TAG_NONE || c->meta[line].reserved)
        return 0;
    uint64_t tag = c->tag[line];
    drop_at(g, p, line, lost, now);
    gcx_cache_invalidate(c, line, NULL, NULL);
    tc->s.invalidations++;
    if (keep_tag)
        c->tag[line] = tag; /* tag kept, data gone: a later match is an "off hit" */
    gcx_tcache_set_state(tc, line, GCX_LINE_OFF, lost);
    return 1;
}

/* A kept tag with no data behind it (a power technique gated the line) is replaced: the technique
 * learns it now, not at the new block's fill, so that a request for the gated block in between
 * already finds the gated stay ended. */
static void tag_replace(gcx_tcache *tc, uint32_t line, uint64_t now)
{
    gcx_tech *pw = tc->power;
    if (pw->ops && pw->ops->line_tag_replace)
        pw->ops->line_tag_replace(pw, tc, line, now);
}

/* Take a line for `r` in set `set`: -1 when every way is reserved. */
static int take_line(gcx_gpu *g, uint32_t p, uint32_t set, uint64_t now)
{
    gcx_tcache *tc = &g->l2[p].tc;
    gcx_cache *c = &tc->c;
    int v = gcx_cache_pick_victim(c, set);
    if (v < 0)
        return -1;
    uint32_t line = set * c->cfg.ways + (uint32_t)v;
    if (c->tag[line] != GCX_TAG_NONE) {
        if (c->meta[line].valid || tc->word_valid[line])
            tc->s.evictions++;
        else
            tag_replace(tc, line, now);
        drop(g, p, line, now);
        gcx_cache_invalidate(c, line, NULL, NULL);
    }
    return (int)line;
}

/* Refuse the head request (GCX_FAIL_*: every way reserved, no MSHR entry, a full entry, no DRAM queue
 * room; GCX_FAIL_PORT: answers fill the hit pipeline and l2.queue). l2_stalls counts every refusal. */
static int refuse(gcx_l2 *l2, int reason)
{
    l2->in_fail = (uint8_t)reason;
    l2->fails++;
    gcx_tcache_count_fail(&l2->tc, reason, 1);
    return 0;
}

void gcx_l2_count_skipped_fails(gcx_gpu *g, uint32_t p, uint64_t n)
{
    gcx_l2 *l2 = &g->l2[p];
    if (l2->in_fail && n) {
        l2->fails += n;
        gcx_tcache_count_fail(&l2->tc, l2->in_fail, n);
    }
}

/* Ask DRAM for the 32-byte sectors `fetch32` of the line at `addr`, answering MSHR entry `e`. */
static void send_fetch(gcx_gpu *g, uint32_t p, uint64_t addr, uint32_t line, uint32_t e, uint8_t fetch32,
                       uint64_t t)
{
    if (fetch32 == 0) /* nothing would ever complete its MSHR entry */
        g->fault = "the L2 fetched no sector of a line (a request needed words outside its L2 line)";
    gcx_req *f = gcx_req_new(g);
    f->addr = addr;
    f->words = gcx_words_of_sectors(fetch32);
    f->sectors = fetch32;
    f->type = GCX_REQ_READ;
    f->flags = line != GCX_NONE ? GCX_RF_L2_ALLOC : 0;
    f->line = line;
    f->home = p;
    f->load = e; /* the MSHR entry it answers */
    f->tech[0] = f->tech[1] = -1;
    g->l2[p].mshr.e[e].requested |= fetch32;
    gcx_dram_push(g, channel_of(g, p), f, t);
}

/* The words a read or an atomic needs from its line. */
static inline uint64_t need_of(const gcx_req *r)
{
    return r->type == GCX_REQ_ATOMIC ? r->words : gcx_words_of_sectors(r->sectors);
}

/* Store r's words into `line` (present, being fetched, or just allocated for it): the power
 * technique's hooks around the data-array write, and the access's statistics (`hit`). A line being
 * fetched gets its valid sectors with the fill. A line just installed for the store has had its
 * use for the replacement policy (the insertion); any other is used again now. */
static void write_line(gcx_tcache *tc, uint32_t line, const gcx_req *r, uint64_t now, int hit, int installed)
{
    gcx_tech *pw = tc->power;
    gcx_cache *c = &tc->c;
    if (pw->ops && pw->ops->line_access)
        pw->ops->line_access(pw, tc, line, r, now);
    if (installed)
        gcx_tcache_note_access_in_order(tc, line, r, now, 1);
    else
        gcx_tcache_note_access(tc, line, r, now, 1);
    tc->word_valid[line] |= r->words;
    tc->word_dirty[line] |= r->words;
    if (!c->meta[line].reserved)
        c->meta[line].valid |= data_sectors(c, tc->word_valid[line]);
    c->meta[line].dirty = 1;
    gcx_tcache_count_access(tc, 1, hit);
    if (pw->ops && pw->ops->line_after_access)
        pw->ops->line_after_access(pw, tc, line, r, now);
}

/* Try to accept one request; 0 if the partition cannot take it this cycle. */
static int l2_accept(gcx_gpu *g, uint32_t p, gcx_req *r, uint64_t now)
{
    gcx_l2 *l2 = &g->l2[p];
    gcx_tcache *tc = &l2->tc;
    gcx_cache *c = &tc->c;
    gcx_tech *pw = tc->power;
    const gcx_gpu_config *cfg = &g->cfg;
    uint64_t la = r->addr >> c->line_shift;
    uint32_t set = set_of(g, c, r->addr);
    gcx_tcache_before_lookup(tc, set, now);
    int way = gcx_cache_find(c, set, la);
    uint32_t line = way >= 0 ? set * c->cfg.ways + (uint32_t)way : GCX_NONE;
    uint32_t ch = channel_of(g, p);
    int is_write = r->type == GCX_REQ_WRITE || r->type == GCX_REQ_WRITEBACK;
    uint64_t lat = (uint64_t)cfg->l2_latency;

    /* The hit latency is a delay line (like GPGPU-Sim's ROP queue): one request enters it per cycle
     * whatever the latency; l2.queue bounds the answers waiting beyond it for the crossbar. */
    if ((!is_write || wants_ack(r)) && l2->in_flight >= (uint32_t)(cfg->l2_queue + cfg->l2_latency))
        return refuse(l2, GCX_FAIL_PORT);

    if (is_write) {
        /* Write-back, write-allocate, no fetch: record the words written. */
        if (way >= 0 && c->meta[line].reserved) {
            /* The line is being fetched: the words go into it now (the fill brings only the others).
             * They are the line's first data if it held none: its residency (dead time, access
             * count) begins here and a line kept off until its fill is powered on to hold them. A
             * power technique cannot gate it before the fill (gcx_l2_power_off refuses). */
            gcx_tcache_note_new_data(tc, line, now);
            if (c->meta[line].state == GCX_LINE_OFF)
                gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
            write_line(tc, line, r, now, 0, 0);
            tc->s.pending_hits++;
            retire(g, l2, r, now + lat);
            return 1;
        }
        int off = way >= 0 && c->meta[line].valid == 0 && tc->word_valid[line] == 0;
        if (way >= 0 && !off) {
            write_line(tc, line, r, now, 1, 0);
            retire(g, l2, r, now + lat);
            return 1;
        }
        if (gcx_dram_backlogged(g, ch))
            return refuse(l2, GCX_FAIL_MISS_QUEUE); /* an eviction or the write itself may need DRAM */
        if (pw->ops && pw->ops->allocate && !pw->ops->allocate(pw, tc, r, now)) {
            gcx_tcache_count_access(tc, 1, 0);
            tc->s.bypasses++;
            dram_write(g, p, r->addr, r->sectors, now, 0);
            retire(g, l2, r, now + lat);
            return 1;
        }
        int installed = !off;
        if (off) {
            tc->s.off_hits++;
            if (pw->ops && pw->ops->line_off_hit)
                pw->ops->line_off_hit(pw, tc, line, r, now);
        } else {
            int v = take_line(g, p, set, now);
            if (v < 0)
                return refuse(l2, GCX_FAIL_LINE_ALLOC);
            line = (uint32_t)v;
            gcx_cache_install(c, line, la, 0, now);
        }
        gcx_tcache_note_new_data(tc, line, now);
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
        if (pw->ops && pw->ops->line_fill)
            pw->ops->line_fill(pw, tc, line, r, now);
        write_line(tc, line, r, now, 0, installed);
        retire(g, l2, r, now + lat);
        return 1;
    }

    /* Reads and atomics. In a sectored L2 a request whose sectors are present hits even while the
     * line is fetched for other sectors (GPGPU-Sim's sector cache); otherwise it waits for the fetch. */
    uint64_t need = need_of(r);
    int present = way >= 0 && (tc->word_valid[line] & need) == need;
    if (way >= 0 && c->meta[line].reserved && !(c->sectors_per_line > 1 && present)) {
        uint32_t ei = tc->mshr_of[line];
        gcx_mshr_entry *e = &l2->mshr.e[ei];
        uint64_t missing = need & ~(tc->word_valid[line] | gcx_words_of_sectors(e->requested));
        if (e->n_waiting >= l2->mshr.merge_cap)
            return refuse(l2, GCX_FAIL_MSHR_MERGE);
        if (missing) {
            /* A sector the fetch in flight does not bring (a sectored L2): fetch it now, into the same
             * line, as GPGPU-Sim's sector cache does on a sector miss to a reserved line. It is a
             * miss; the entry answers each waiting request once its own sectors have arrived. */
            if (gcx_dram_backlogged(g, ch))
                return refuse(l2, GCX_FAIL_MISS_QUEUE);
            send_fetch(g, p, r->addr, line, ei, fetch_sectors32(c, missing), now + lat);
        } else {
            tc->s.pending_hits++;
        }
        /* Either way a use of the line being fetched (GPGPU-Sim's HIT_RESERVED, or a sector miss). */
        c->cfg.policy->on_hit(c, line);
        gcx_mshr_add(&l2->mshr, ei, r);
        gcx_tcache_count_access(tc, 0, 0);
        return 1;
    }
    int off = way >= 0 && c->meta[line].valid == 0 && tc->word_valid[line] == 0;
    if (present && !off) {
        uint64_t extra = 0;
        if (pw->ops && pw->ops->line_access)
            extra = pw->ops->line_access(pw, tc, line, r, now);
        gcx_tcache_note_access(tc, line, r, now, r->type == GCX_REQ_ATOMIC);
        if (r->type == GCX_REQ_ATOMIC) {
            c->meta[line].dirty = 1;
            tc->word_dirty[line] |= r->words;
        }
        gcx_tcache_count_access(tc, 0, 1);
        if (pw->ops && pw->ops->line_after_access)
            pw->ops->line_after_access(pw, tc, line, r, now);
        reply(g, l2, r, now + lat + extra);
        return 1;
    }
    /* Miss: an MSHR entry, and a DRAM channel that is not behind (a dirty victim may need it too). */
    if (l2->mshr.n_free == 0)
        return refuse(l2, GCX_FAIL_MSHR_ENTRY);
    if (gcx_dram_backlogged(g, ch))
        return refuse(l2, GCX_FAIL_MISS_QUEUE);
    int allocate = !(pw->ops && pw->ops->allocate) || pw->ops->allocate(pw, tc, r, now);
    uint8_t fetch32;
    if (!allocate) {
        line = GCX_NONE;
        fetch32 = (uint8_t)gcx_sector_mask_of_words(need, c->cfg.line_bytes, 32);
        tc->s.bypasses++;
    } else if (way >= 0) {
        /* Present but powered off, or missing some words (written lazily, or other sectors). */
        if (off) {
            tc->s.off_hits++;
            if (pw->ops && pw->ops->line_off_hit)
                pw->ops->line_off_hit(pw, tc, line, r, now);
        }
        fetch32 = fetch_sectors32(c, need & ~tc->word_valid[line]);
        c->cfg.policy->on_hit(c, line); /* the kept line is used again */
    } else {
        int v = take_line(g, p, set, now);
        if (v < 0)
            return refuse(l2, GCX_FAIL_LINE_ALLOC);
        line = (uint32_t)v;
        gcx_cache_install(c, line, la, 0, now);
        fetch32 = c->sectors_per_line == 1 ? (uint8_t)((1u << (c->cfg.line_bytes / 32)) - 1)
                                           : fetch_sectors32(c, need);
    }
    uint32_t e = gcx_mshr_alloc(&l2->mshr, la, line);
    if (line != GCX_NONE) {
        c->meta[line].reserved = 1;
        tc->mshr_of[line] = e;
    }
    send_fetch(g, p, r->addr, line, e, fetch32, now + lat);
    gcx_mshr_add(&l2->mshr, e, r);
    gcx_tcache_count_access(tc, 0, 0);
    return 1;
}

/* Data for MSHR entry f->load arrived from DRAM. */
static void l2_fill(gcx_gpu *g, uint32_t p, gcx_req *f, uint64_t now)
{
    gcx_l2 *l2 = &g->l2[p];
    gcx_tcache *tc = &l2->tc;
    gcx_cache *c = &tc->c;
    gcx_tech *pw = tc->power;
    uint32_t ei = f->load, line = f->line;
    gcx_mshr_entry *e = &l2->mshr.e[ei];
    e->received |= f->sectors;
    /* An entry can wait for more than one fetch (sectors asked for after the first): it stays, with its
     * line reserved, until the last arrives. */
    int complete = (e->received & e->requested) == e->requested;
    if (line != GCX_NONE) {
        gcx_tcache_note_fill(tc, line, now, gcx_to_cache_sectors(f->sectors, c));
        tc->word_valid[line] |= f->words;
        c->meta[line].valid |= data_sectors(c, tc->word_valid[line]);
        if (complete) {
            c->meta[line].reserved = 0;
            tc->mshr_of[line] = GCX_NONE;
        }
        gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
    }
    gcx_req *w = e->waiting;
    if (complete) {
        gcx_mshr_release(&l2->mshr, ei);
    } else {
        /* Answer the requests whose words are all here; the others wait for the next fetch. */
        gcx_req *ready = NULL, **ready_tail = &ready;
        e->waiting = e->waiting_tail = NULL;
        e->n_waiting = 0;
        while (w) {
            gcx_req *next = w->next;
            if (line == GCX_NONE || (need_of(w) & ~tc->word_valid[line]) == 0) {
                *ready_tail = w;
                ready_tail = &w->next;
            } else {
                gcx_mshr_add(&l2->mshr, ei, w);
            }
            w = next;
        }
        *ready_tail = NULL;
        w = ready;
    }
    /* Every fill of the line (a sectored line may take several) tells the power technique, with the
     * requests it answers now. */
    if (line != GCX_NONE && pw->ops && pw->ops->line_fill)
        pw->ops->line_fill(pw, tc, line, w, now);
    gcx_req_free(g, f);
    while (w) {
        gcx_req *next = w->next;
        if (line != GCX_NONE) {
            if (pw->ops && pw->ops->line_access)
                pw->ops->line_access(pw, tc, line, w, now);
            gcx_tcache_note_access_in_order(tc, line, w, now, w->type == GCX_REQ_ATOMIC);
            if (w->type == GCX_REQ_ATOMIC) {
                c->meta[line].dirty = 1;
                tc->word_dirty[line] |= w->words;
            }
            if (pw->ops && pw->ops->line_after_access)
                pw->ops->line_after_access(pw, tc, line, w, now);
        }
        reply(g, l2, w, now + 1);
        w = next;
    }
}

int gcx_l2_cycle(gcx_gpu *g, uint32_t p)
{
    uint64_t now = g->now;
    gcx_l2 *l2 = &g->l2[p];
    int progress = 0;
    if (gcx_q_ready(&l2->fill_q, now)) {
        l2_fill(g, p, gcx_q_pop(&l2->fill_q), now);
        progress = 1;
    }
    if (gcx_q_ready(&l2->reply_q, now)) {
        gcx_req *r = l2->reply_q.head;
        if (gcx_xbar_can_send(&g->reply_net, p, r->sm, now)) {
            gcx_q_pop(&l2->reply_q);
            l2->in_flight--;
            gcx_xbar_send(&g->reply_net, p, r->sm, r, gcx_answer_bytes(r), now);
            progress = 1;
        }
    }
    gcx_queue *in = &g->req_net.dst_q[p];
    l2->in_fail = 0;
    if (gcx_q_ready(in, now)) {
        /* Unlink first: accepting moves the request into other queues. */
        gcx_req *r = gcx_q_pop(in);
        uint32_t sm = r->sm; /* read first: once accepted, the request belongs to the L2's queues */
        if (l2_accept(g, p, r, now)) {
            gcx_tech *pw = l2->tc.power;
            if (pw->ops && pw->ops->l2_request)
                pw->ops->l2_request(pw, &l2->tc, sm, now);
            progress = 1;
        } else {
            gcx_q_push_front(in, r);
        }
    }
    return progress;
}

uint64_t gcx_l2_next_event(gcx_gpu *g, uint32_t p)
{
    gcx_l2 *l2 = &g->l2[p];
    uint64_t t = GCX_INF, now = g->now;
    if (l2->fill_q.head)
        t = l2->fill_q.head->t_ready;
    /* The head reply leaves when due and the reply port is free; a full buffer at the SM waits for
     * the SM to take a reply (an event of its own). */
    const gcx_req *h = l2->reply_q.head;
    if (h && (h->t_ready > now || !gcx_q_full(&g->reply_net.dst_q[h->sm]))) {
        uint64_t d = gcx_xbar_departure(&g->reply_net, p, h->t_ready);
        if (d < t)
            t = d;
    }
    const gcx_queue *in = &g->req_net.dst_q[p];
    if (in->head && in->head->t_ready > now && in->head->t_ready < t)
        t = in->head->t_ready;
    return t;
}

/* The words of line `la` that the copy of [addr, addr + bytes) writes, widened to whole cache
 * sectors (a line holds whole sectors: on an unsectored L2, the whole line). */
static uint64_t copied_words(const gcx_cache *c, uint64_t la, uint64_t addr, uint64_t bytes)
{
    uint64_t line_bytes = c->cfg.line_bytes, start = la * line_bytes, end = start + line_bytes;
    uint64_t lo = addr > start ? addr : start, hi = addr + bytes < end ? addr + bytes : end;
    uint32_t first = (uint32_t)((lo - start) / 4), n = (uint32_t)((hi - start + 3) / 4) - first;
    uint64_t words = (n >= 64 ? ~0ull : (1ull << n) - 1) << first;
    return gcx_words_of_sectors(fetch_sectors32(c, words));
}

/* The copy finds the block's line present: as GPGPU-Sim's tag_array::fill, it fills the copied
 * words the line lacks (a store wrote only some words; or a power technique switched the data off
 * and kept the tag). Words it holds keep their state (a dirty word keeps its writeback). A line
 * that held no data begins a residency now, as a line the copy installs: the power technique
 * finds it at the kernel's start (filled at `now`); one that held data is written by the copy all
 * the same, and the power technique is told (cache decay restarts its idle count). A line being
 * fetched gets its data from the fetch. */
static void prefill_present(gcx_gpu *g, gcx_tcache *tc, uint32_t line, uint64_t words)
{
    gcx_cache *c = &tc->c;
    if (c->meta[line].reserved)
        return;
    if (tc->word_valid[line]) {
        gcx_tech *pw = tc->power;
        if (pw->ops && pw->ops->line_prefill)
            pw->ops->line_prefill(pw, tc, line, g->now);
    }
    if ((tc->word_valid[line] & words) == words)
        return;
    gcx_tcache_note_new_data(tc, line, g->now);
    tc->word_valid[line] |= words;
    c->meta[line].valid |= data_sectors(c, tc->word_valid[line]);
    g->dram_prefill_lines++;
}

void gcx_l2_prefill(gcx_gpu *g, uint64_t addr, uint64_t bytes)
{
    uint32_t line_bytes = (uint32_t)g->cfg.l2_line_bytes;
    uint64_t first = addr / line_bytes, last = (addr + bytes + line_bytes - 1) / line_bytes;
    for (uint64_t la = first; la < last; la++) {
        uint64_t a = la * line_bytes;
        uint32_t p = gcx_l2_partition_of(g, a);
        gcx_tcache *tc = &g->l2[p].tc;
        gcx_cache *c = &tc->c;
        uint32_t set = set_of(g, c, a);
        gcx_tcache_before_lookup(tc, set, g->now);
        int way = gcx_cache_find(c, set, la);
        if (way >= 0) {
            prefill_present(g, tc, set * c->cfg.ways + (uint32_t)way, copied_words(c, la, addr, bytes));
            continue;
        }
        int v = gcx_cache_pick_victim(c, set);
        if (v < 0)
            continue;
        uint32_t line = set * c->cfg.ways + (uint32_t)v;
        if (c->tag[line] != GCX_TAG_NONE) {
            /* As GPGPU-Sim's force_tag_access: the victim is replaced without a writeback, but the
             * power technique learns that its data left. */
            gcx_tech *pw = tc->power;
            if (!c->meta[line].valid && !tc->word_valid[line])
                tag_replace(tc, line, g->now);
            else if (pw->ops && pw->ops->line_evict)
                pw->ops->line_evict(pw, tc, line, g->now);
            gcx_tcache_note_drop(tc, line, g->now);
            tc->word_valid[line] = 0;
            tc->word_dirty[line] = 0;
            gcx_cache_invalidate(c, line, NULL, NULL);
        }
        gcx_cache_install(c, line, la, 0, g->now);
        gcx_tcache_note_new_data(tc, line, g->now);
        /* Only the sectors the copy writes, as for a present line (GPGPU-Sim fills a sectored L2
         * sector by sector): a copy that covers part of the line leaves its other sectors to be
         * fetched. An unsectored line is one sector, filled whole. */
        tc->word_valid[line] = copied_words(c, la, addr, bytes);
        c->meta[line].valid = data_sectors(c, tc->word_valid[line]);
        g->dram_prefill_lines++;
    }
}

/* A DRAM channel. `simple`: requests are served in order, each taking its burst on the data bus
 * plus a fixed latency. `frfcfs`: banks with row buffers; among waiting requests, the oldest one
 * hitting an open row in a free bank goes first, else the oldest one whose bank is free; a row
 * miss pays precharge and activate before the column access. Reads return data to their L2
 * partition; writes just complete. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_dram_init(gcx_gpu *g, uint32_t ch, gcx_error *err)
{
    gcx_dram *d = &g->dram[ch];
    memset(d, 0, sizeof *d);
    d->q.cap = (uint32_t)g->cfg.dram_queue;
    d->busy.cap = UINT32_MAX;
    d->bank_free = calloc((size_t)g->cfg.dram_banks, sizeof *d->bank_free);
    d->open_row = malloc((size_t)g->cfg.dram_banks * sizeof *d->open_row);
    if (!d->bank_free || !d->open_row)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for DRAM channel %u", ch);
    for (int64_t b = 0; b < g->cfg.dram_banks; b++)
        d->open_row[b] = GCX_INF;
    gcx_rng_seed(&d->jitter, g->seed ^ (0xD7A3ull * (ch + 1)));
    return GCX_OK;
}

void gcx_dram_free(gcx_dram *d)
{
    free(d->bank_free);
    free(d->open_row);
    memset(d, 0, sizeof *d);
}

/* Whether channel `ch`'s scheduler has room for `n` more requests. */
int gcx_dram_can_accept(const gcx_gpu *g, uint32_t ch, uint32_t n)
{
    const gcx_queue *q = &g->dram[ch].q;
    return q->n + n <= q->cap;
}

void gcx_dram_push(gcx_gpu *g, uint32_t ch, gcx_req *r, uint64_t t_ready)
{
    /* Writebacks may exceed the queue briefly (they come from evictions that already happened). */
    gcx_q_insert_sorted(&g->dram[ch].q, r, t_ready);
}

/* The channel-local address: the partition bits removed, partitions of the channel side by side. */
static inline uint64_t channel_addr(const gcx_gpu *g, uint64_t addr)
{
    uint64_t il = (uint64_t)g->cfg.l2_interleave_bytes, parts = (uint64_t)g->cfg.l2_partitions;
    uint64_t chunk = addr / il;
    uint64_t sub = (chunk % parts) % g->l2_per_channel;
    return ((chunk / parts) * g->l2_per_channel + sub) * il + addr % il;
}

static inline uint32_t burst_cycles(const gcx_gpu *g, const gcx_req *r)
{
    double bytes = (double)gcx_popcount64(r->sectors) * 32.0;
    double c = bytes / g->cfg.dram_bytes_per_cycle;
    uint32_t n = (uint32_t)c;
    return n + (c > (double)n) + (n == 0 && c == 0.0);
}

static void start(gcx_gpu *g, gcx_dram *d, gcx_req *r, uint64_t data_start, uint64_t now)
{
    uint32_t burst = burst_cycles(g, r);
    if (data_start < d->bus_free)
        data_start = d->bus_free;
    d->bus_free = data_start + burst;
    d->bytes += (uint64_t)gcx_popcount64(r->sectors) * 32;
    if (r->type == GCX_REQ_READ)
        d->reads++;
    else
        d->writes++;
    uint64_t latency = (uint64_t)g->cfg.dram_latency;
    if (g->cfg.dram_latency_jitter) /* the busy queue is kept in completion order, so jitter may reorder */
        latency += gcx_rng_below(&d->jitter, (uint32_t)g->cfg.dram_latency_jitter + 1);
    gcx_q_insert_sorted(&d->busy, r, data_start + burst + latency);
    (void)now;
}

/* Remove and return the request at position `prev->next` (or the head when prev is NULL). */
static gcx_req *unlink_after(gcx_queue *q, gcx_req *prev)
{
    gcx_req *r = prev ? prev->next : q->head;
    if (prev)
        prev->next = r->next;
    else
        q->head = r->next;
    if (q->tail == r)
        q->tail = prev;
    q->n--;
    r->next = NULL;
    return r;
}

static int schedule_frfcfs(gcx_gpu *g, gcx_dram *d, uint64_t now)
{
    const gcx_gpu_config *c = &g->cfg;
    uint64_t row_bytes = (uint64_t)c->dram_row_bytes, banks = (uint64_t)c->dram_banks;
    gcx_req *pick_prev = NULL, *pick = NULL, *first_prev = NULL, *first = NULL, *prev = NULL;
    for (gcx_req *r = d->q.head; r && r->t_ready <= now; prev = r, r = r->next) {
        uint64_t ca = channel_addr(g, r->addr);
        uint64_t bank = (ca / row_bytes) % banks, row = ca / (row_bytes * banks);
        if (d->bank_free[bank] > now)
            continue;
        if (d->open_row[bank] == row) {
            pick = r;
            pick_prev = prev;
            break;
        }
        if (!first) {
            first = r;
            first_prev = prev;
        }
    }
    int row_hit = pick != NULL;
    if (!pick) {
        pick = first;
        pick_prev = first_prev;
    }
    if (!pick)
        return 0;
    uint64_t ca = channel_addr(g, pick->addr);
    uint64_t bank = (ca / row_bytes) % banks, row = ca / (row_bytes * banks);
    uint64_t t = (uint64_t)c->dram_t_cl;
    if (!row_hit) {
        t += (uint64_t)c->dram_t_rcd + (d->open_row[bank] != GCX_INF ? (uint64_t)c->dram_t_rp : 0);
        d->row_misses++;
    } else {
        d->row_hits++;
    }
    d->open_row[bank] = row;
    gcx_req *r = unlink_after(&d->q, pick_prev);
    start(g, d, r, now + t, now);
    d->bank_free[bank] = d->bus_free; /* the bank is busy until its data has been transferred */
    return 1;
}

int gcx_dram_cycle(gcx_gpu *g, uint32_t ch)
{
    gcx_dram *d = &g->dram[ch];
    uint64_t now = g->now;
    int progress = 0;
    while (gcx_q_ready(&d->busy, now)) {
        gcx_req *r = gcx_q_pop(&d->busy);
        if (r->type == GCX_REQ_READ) {
            gcx_q_push(&g->l2[r->home].fill_q, r, now);
        } else {
            gcx_req_free(g, r);
        }
        progress = 1;
    }
    if (g->cfg.dram_model == GCX_DRAM_SIMPLE) {
        if (gcx_q_ready(&d->q, now) && d->bus_free <= now + 1) {
            start(g, d, gcx_q_pop(&d->q), now, now);
            progress = 1;
        }
    } else if (d->q.head && d->q.head->t_ready <= now) {
        progress |= schedule_frfcfs(g, d, now);
    }
    return progress;
}

uint64_t gcx_dram_next_event(gcx_gpu *g, uint32_t ch)
{
    gcx_dram *d = &g->dram[ch];
    uint64_t t = GCX_INF, now = g->now;
    if (d->busy.head)
        t = d->busy.head->t_ready;
    if (g->cfg.dram_model == GCX_DRAM_SIMPLE) {
        if (d->q.head) {
            uint64_t s = d->q.head->t_ready;
            if (d->bus_free > s + 1)
                s = d->bus_free - 1;
            if (s <= now)
                s = now + 1;
            if (s < t)
                t = s;
        }
    } else {
        uint64_t row_bytes = (uint64_t)g->cfg.dram_row_bytes, banks = (uint64_t)g->cfg.dram_banks;
        for (gcx_req *r = d->q.head; r; r = r->next) {
            uint64_t bank = (channel_addr(g, r->addr) / row_bytes) % banks;
            uint64_t s = r->t_ready > d->bank_free[bank] ? r->t_ready : d->bank_free[bank];
            if (s <= now)
                s = now + 1;
            if (s < t)
                t = s;
        }
    }
    return t;
}

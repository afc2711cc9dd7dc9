/* A DRAM channel. `simple`: requests are served in order, each taking its burst on the data bus
 * plus a fixed latency. `frfcfs`: banks with row buffers; among waiting requests, the oldest one
 * hitting an open row in a free bank goes first, else the oldest one whose bank is free; a row
 * miss pays precharge and activate before the column access, and a bank takes its next column
 * command once this one's burst is over, so row hits to one bank follow each other at the bus's
 * pace. Reads return data to their L2 partition; writes just complete.
 *
 * The scheduler's queue (dram.queue, GPGPU-Sim's -gpgpu_frfcfs_dram_sched_queue_size) holds only
 * requests that have reached the channel: an L2 miss first crosses the L2's latency (GPGPU-Sim's
 * requests cross the ROP delay before the L2 looks them up) and waits in `pend` meanwhile, and
 * while the queue is full. A queue that also held requests during that latency would cap a channel
 * at dram.queue requests per L2 latency, far below its bandwidth. The L2 takes no new miss while
 * requests that reached the channel wait for room (gcx_dram_backlogged): the channel is behind,
 * as when GPGPU-Sim's L2-to-DRAM queue is full.
 *
 * The data bus is kept in exact (fractional) cycles: 128 bytes at 42.2 bytes a cycle take 3.03
 * cycles, and rounding each burst up to whole cycles would serve 32 bytes a cycle instead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_dram_init(gcx_gpu *g, uint32_t ch, gcx_error *err)
{
    gcx_dram *d = &g->dram[ch];
    memset(d, 0, sizeof *d);
    d->q.cap = (uint32_t)g->cfg.dram_queue;
    d->pend.cap = UINT32_MAX;
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

/* Move the requests that have reached the channel into the scheduler's queue while it has room,
 * in the order they arrived. */
static void admit(gcx_dram *d, uint64_t now)
{
    while (gcx_q_ready(&d->pend, now) && !gcx_q_full(&d->q)) {
        gcx_req *r = gcx_q_pop(&d->pend);
        gcx_q_push(&d->q, r, r->t_ready);
    }
}

int gcx_dram_backlogged(gcx_gpu *g, uint32_t ch)
{
    gcx_dram *d = &g->dram[ch];
    admit(d, g->now);
    return gcx_q_ready(&d->pend, g->now);
}

/* A request for channel `ch` that reaches it at `t_ready`. Writebacks come without asking
 * (evictions that already happened) and wait in line like the others. */
void gcx_dram_push(gcx_gpu *g, uint32_t ch, gcx_req *r, uint64_t t_ready)
{
    gcx_q_insert_sorted(&g->dram[ch].pend, r, t_ready);
}

/* The channel-local address: the partition bits removed, partitions of the channel side by side. */
static inline uint64_t channel_addr(const gcx_gpu *g, uint64_t addr)
{
    uint64_t il = (uint64_t)g->cfg.l2_interleave_bytes, parts = (uint64_t)g->cfg.l2_partitions;
    uint64_t chunk = gcx_l2_chunk(g, addr);
    uint64_t sub = (chunk % parts) % g->l2_per_channel;
    return ((chunk / parts) * g->l2_per_channel + sub) * il + addr % il;
}

/* The first whole cycle at or after the exact time t (a bus time within rounding of a whole cycle
 * is that cycle). */
static inline uint64_t cycle_at(double t) { return (uint64_t)ceil(t - 1e-9); }

/* Put r's data on the bus from `data_start`, or once the bus is free. */
static void start(gcx_gpu *g, gcx_dram *d, gcx_req *r, uint64_t data_start)
{
    double burst = (double)gcx_popcount64(r->sectors) * 32.0 / g->cfg.dram_bytes_per_cycle;
    double begin = (double)data_start > d->bus_exact ? (double)data_start : d->bus_exact;
    d->bus_exact = begin + burst;
    d->bus_free = cycle_at(d->bus_exact);
    d->bytes += (uint64_t)gcx_popcount64(r->sectors) * 32;
    if (r->type == GCX_REQ_READ)
        d->reads++;
    else
        d->writes++;
    uint64_t latency = (uint64_t)g->cfg.dram_latency;
    if (g->cfg.dram_latency_jitter) /* the busy queue is kept in completion order, so jitter may reorder */
        latency += gcx_rng_below(&d->jitter, (uint32_t)g->cfg.dram_latency_jitter + 1);
    gcx_q_insert_sorted(&d->busy, r, d->bus_free + latency);
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
    start(g, d, r, now + t);
    /* The column command went t_cl before the data; the bank takes the next one a burst later. */
    d->bank_free[bank] = cycle_at(d->bus_exact - (double)c->dram_t_cl);
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
    uint32_t waiting = d->q.n;
    admit(d, now);
    progress |= d->q.n != waiting;
    if (g->cfg.dram_model == GCX_DRAM_SIMPLE) {
        if (gcx_q_ready(&d->q, now) && d->bus_free <= now + 1) {
            start(g, d, gcx_q_pop(&d->q), now);
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
    /* A request reaching the channel (admitted next cycle if there is room; if there is none, the
     * channel is behind from then on and its queue's progress is the next event). */
    if (d->pend.head) {
        uint64_t s = d->pend.head->t_ready > now ? d->pend.head->t_ready : gcx_q_full(&d->q) ? GCX_INF : now + 1;
        if (s < t)
            t = s;
    }
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

/* A crossbar: each packet occupies its source and its destination port for its flits (one
 * packet at a time per port, first come first served) and then crosses a fixed latency. Each
 * destination has a bounded buffer of packets on their way or waiting to be taken; a full buffer
 * refuses new packets, which is how back-pressure reaches the senders. Arrivals at a destination
 * are in order, because its port serves one packet after another.
 *
 * Ports are timed in flit slots (flits_per_cycle of them a cycle), so that a packet may begin in
 * the slot after the previous one ended: five-flit packets at two flits a cycle take 2.5 cycles
 * each, not 3.
 *
 * A source sends its next packet only once its port is free: its backlog waits in the sender's
 * own queue (an input FIFO, head-of-line blocking included). Were a busy source allowed to book
 * its later packets, each would hold its destination's port at a future cycle, and other sources
 * could not use that port meanwhile although it is idle; with many sources each running ahead,
 * destination ports spend most of their time booked but idle. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_xbar_init(gcx_xbar *x, uint32_t n_src, uint32_t n_dst, uint32_t latency, uint32_t flit_bytes,
                  uint32_t flits_per_cycle, uint32_t buffer, gcx_error *err)
{
    memset(x, 0, sizeof *x);
    x->n_src = n_src;
    x->n_dst = n_dst;
    x->latency = latency;
    x->flit_bytes = flit_bytes;
    x->flits_per_cycle = flits_per_cycle;
    x->src_free = calloc(n_src, sizeof *x->src_free);
    x->dst_free = calloc(n_dst, sizeof *x->dst_free);
    x->dst_q = calloc(n_dst, sizeof *x->dst_q);
    if (!x->src_free || !x->dst_free || !x->dst_q) {
        gcx_xbar_free(x);
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for a %ux%u crossbar", n_src, n_dst);
    }
    for (uint32_t d = 0; d < n_dst; d++)
        x->dst_q[d].cap = buffer;
    return GCX_OK;
}

void gcx_xbar_free(gcx_xbar *x)
{
    free(x->src_free);
    free(x->dst_free);
    free(x->dst_q);
    memset(x, 0, sizeof *x);
}

int gcx_xbar_can_send(const gcx_xbar *x, uint32_t src, uint32_t dst, uint64_t now)
{
    return x->src_free[src] < (now + 1) * x->flits_per_cycle && !gcx_q_full(&x->dst_q[dst]);
}

uint64_t gcx_xbar_charge(gcx_xbar *x, uint32_t src, uint32_t dst, uint32_t bytes, uint64_t now)
{
    uint32_t flits = (bytes + x->flit_bytes - 1) / x->flit_bytes;
    if (flits == 0)
        flits = 1;
    uint64_t start = now * x->flits_per_cycle;
    if (x->src_free[src] > start)
        start = x->src_free[src];
    if (x->dst_free[dst] > start)
        start = x->dst_free[dst];
    uint64_t end = start + flits;
    x->src_free[src] = x->dst_free[dst] = end;
    x->flits += flits;
    x->packets++;
    /* Arrives in the cycle after its last flit crossed. */
    return (end + x->flits_per_cycle - 1) / x->flits_per_cycle + x->latency;
}

void gcx_xbar_send(gcx_xbar *x, uint32_t src, uint32_t dst, gcx_req *r, uint32_t bytes, uint64_t now)
{
    gcx_q_push(&x->dst_q[dst], r, gcx_xbar_charge(x, src, dst, bytes, now));
}

uint64_t gcx_xbar_next_event(const gcx_xbar *x)
{
    uint64_t t = GCX_INF;
    for (uint32_t d = 0; d < x->n_dst; d++)
        if (x->dst_q[d].head && x->dst_q[d].head->t_ready < t)
            t = x->dst_q[d].head->t_ready;
    return t;
}

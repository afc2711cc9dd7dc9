/* First in, first out: lines leave in the order they were filled; hits change nothing. */
#include "policies/policies.h"

static void fifo_hit(gcx_cache *c, uint32_t line) { (void)c, (void)line; }
static void fifo_fill(gcx_cache *c, uint32_t line) { c->repl[line] = gcx_next_stamp(c); }

static uint32_t fifo_victim(gcx_cache *c, uint32_t set, uint64_t candidates)
{
    return gcx_policy_min_repl(c, set, candidates);
}

static void fifo_run(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n)
{
    gcx_cache_run_stamped(c, addrs, writes, n, 0);
}

const gcx_policy gcx_policy_fifo = {
    .name = "fifo",
    .doc = "first in, first out",
    .on_hit = fifo_hit,
    .on_fill = fifo_fill,
    .victim = fifo_victim,
    .run = fifo_run,
};

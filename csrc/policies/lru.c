/* Least recently used: each line remembers when it was last used; the oldest goes. */
#include "policies/policies.h"

static void lru_touch(gcx_cache *c, uint32_t line) { c->repl[line] = gcx_next_stamp(c); }

static uint32_t lru_victim(gcx_cache *c, uint32_t set, uint64_t candidates)
{
    return gcx_policy_min_repl(c, set, candidates);
}

static void lru_run(gcx_cache *c, const uint64_t *addrs, const uint8_t *writes, size_t n)
{
    gcx_cache_run_stamped(c, addrs, writes, n, 1);
}

const gcx_policy gcx_policy_lru = {
    .name = "lru",
    .doc = "least recently used",
    .on_hit = lru_touch,
    .on_fill = lru_touch,
    .victim = lru_victim,
    .run = lru_run,
};

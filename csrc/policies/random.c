/* Random replacement from the cache's own seeded generator: the same seed gives the same
 * victims, so runs stay reproducible. */
#include "policies/policies.h"

static void random_noop(gcx_cache *c, uint32_t line) { (void)c, (void)line; }

static uint32_t random_victim(gcx_cache *c, uint32_t set, uint64_t candidates)
{
    (void)set;
    uint32_t k = gcx_rng_below(&c->rng, (uint32_t)gcx_popcount64(candidates));
    while (k--)
        candidates &= candidates - 1;
    return (uint32_t)__builtin_ctzll(candidates);
}

const gcx_policy gcx_policy_random = {
    .name = "random",
    .doc = "uniformly random victim, seeded",
    .on_hit = random_noop,
    .on_fill = random_noop,
    .victim = random_victim,
};

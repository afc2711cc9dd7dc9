/* The one list of replacement policies the cache can be configured with. */
#include "policies/policies.h"

#include <string.h>

const gcx_policy *const gcx_policies[] = {
    &gcx_policy_lru,
    &gcx_policy_fifo,
    &gcx_policy_random,
    &gcx_policy_srrip,
    NULL,
};

_Static_assert(sizeof gcx_policies / sizeof gcx_policies[0] - 1 <= GCX_MAX_POLICIES,
               "more policies than GCX_MAX_POLICIES (cache/cache.h): raise it");

const gcx_policy *gcx_policy_find(const char *name)
{
    for (const gcx_policy *const *p = gcx_policies; *p; p++)
        if (strcmp((*p)->name, name) == 0)
            return *p;
    return NULL;
}

void gcx_policy_defaults(const gcx_policy *p, double *params)
{
    for (int i = 0; i < p->n_params; i++)
        params[i] = p->params[i].default_value;
}

uint32_t gcx_policy_min_repl(const gcx_cache *c, uint32_t set, uint64_t candidates)
{
    const uint32_t *r = c->repl + (size_t)set * c->cfg.ways;
    uint32_t best = (uint32_t)__builtin_ctzll(candidates);
    uint32_t best_value = r[best];
    for (uint64_t m = candidates & (candidates - 1); m; m &= m - 1) {
        uint32_t w = (uint32_t)__builtin_ctzll(m);
        if (r[w] < best_value) {
            best_value = r[w];
            best = w;
        }
    }
    return best;
}

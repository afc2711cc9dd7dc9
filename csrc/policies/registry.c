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

/* A policy's parameters live in fixed arrays (gcx_cache_config.policy_params, the configuration's
 * policy_param): a policy declaring more would have its last ones read from and written to memory
 * that is not theirs, silently. */
int gcx_policy_list_check(const gcx_policy *const *list, gcx_error *err)
{
    int n = 0;
    for (const gcx_policy *const *p = list; *p; p++, n++) {
        if ((*p)->n_params < 0 || (*p)->n_params > GCX_MAX_POLICY_PARAMS)
            return gcx_fail(err, GCX_ERR_VALUE,
                            "replacement policy '%s' declares %d parameters; a policy may have at most "
                            "GCX_MAX_POLICY_PARAMS = %d (csrc/cache/cache.h): raise it",
                            (*p)->name, (*p)->n_params, GCX_MAX_POLICY_PARAMS);
        for (const gcx_policy *const *q = list; q < p; q++)
            if (strcmp((*q)->name, (*p)->name) == 0)
                return gcx_fail(err, GCX_ERR_VALUE,
                                "two replacement policies are named '%s': a name selects one policy", (*p)->name);
    }
    if (n > GCX_MAX_POLICIES)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "%d replacement policies; the core keeps at most GCX_MAX_POLICIES = %d "
                        "(csrc/cache/cache.h): raise it",
                        n, GCX_MAX_POLICIES);
    return GCX_OK;
}

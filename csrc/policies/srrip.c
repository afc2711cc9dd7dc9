/* Static re-reference interval prediction with hit priority (Jaleel et al., ISCA 2010):
 * an M-bit re-reference prediction value (RRPV) per line; fills predict a long interval
 * (2^M - 2), hits a near-immediate one (0); the victim is the first candidate way predicted
 * distant (2^M - 1), ageing every candidate until one is. */
#include "policies/policies.h"

static const gcx_param_spec srrip_params[] = {
    {"rrpv_bits", "bits of the re-reference prediction value (M)", 2, 1, 8, 1},
};

static int srrip_init(gcx_cache *c, const double *params, gcx_error *err)
{
    (void)err;
    c->repl_param[0] = (1ull << (uint32_t)params[0]) - 1; /* distant RRPV */
    return GCX_OK;
}

static void srrip_hit(gcx_cache *c, uint32_t line) { c->repl[line] = 0; }
static void srrip_fill(gcx_cache *c, uint32_t line) { c->repl[line] = (uint32_t)c->repl_param[0] - 1; }

static uint32_t srrip_victim(gcx_cache *c, uint32_t set, uint64_t candidates)
{
    uint32_t *r = c->repl + (size_t)set * c->cfg.ways;
    uint32_t distant = (uint32_t)c->repl_param[0];
    for (;;) {
        for (uint64_t m = candidates; m; m &= m - 1) {
            uint32_t w = (uint32_t)__builtin_ctzll(m);
            if (r[w] >= distant)
                return w;
        }
        for (uint64_t m = candidates; m; m &= m - 1)
            r[__builtin_ctzll(m)]++;
    }
}

const gcx_policy gcx_policy_srrip = {
    .name = "srrip",
    .doc = "static re-reference interval prediction, hit priority (Jaleel et al. 2010)",
    .params = srrip_params,
    .n_params = 1,
    .init = srrip_init,
    .on_hit = srrip_hit,
    .on_fill = srrip_fill,
    .victim = srrip_victim,
};

/* Ideal-Gating (the oracle of the LoSCache paper): every L2 line is powered on from the fill of its
 * data to the data's true last access and off otherwise, with no misprediction and no overhead.
 *
 * Nothing is really gated while the model runs, so performance and every access count are the
 * baseline's by construction. When a residency ends (eviction, or the end of the run) its last
 * access is known, and the line-state layer places the power-off there, in the past: the line's
 * ON residency is exactly its live time (l2_resid_on == l2_live_cycles). */
#include "sim/gpu.h"

static int ideal_init(gcx_tech *t, gcx_error *err)
{
    gcx_gpu *g = t->gpu;
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++) {
        gcx_tcache *tc = &g->l2[p].tc;
        for (uint32_t line = 0; line < tc->c.n_lines; line++)
            gcx_tcache_set_state(tc, line, GCX_LINE_OFF, 0);
    }
    return GCX_OK;
}

static inline int has_data(const gcx_tcache *c, uint32_t line)
{
    return c->c.meta[line].valid || c->word_valid[line];
}

/* Lines the L2 prefill (MemcpyHtoD) filled at this kernel's start hold data from now on. */
static void ideal_kernel_start(gcx_tech *t, uint32_t kernel, uint64_t now)
{
    gcx_gpu *g = t->gpu;
    for (uint32_t p = 0; p < (uint32_t)g->cfg.l2_partitions; p++) {
        gcx_tcache *tc = &g->l2[p].tc;
        for (uint32_t line = 0; line < tc->c.n_lines; line++)
            if (has_data(tc, line) && tc->c.meta[line].fill_cycle == now)
                gcx_tcache_set_state(tc, line, GCX_LINE_ON, now);
    }
}

static void ideal_line_evict(gcx_tech *t, gcx_tcache *c, uint32_t line, uint64_t now)
{
    gcx_tcache_set_state(c, line, GCX_LINE_OFF, c->c.meta[line].last_access);
}

static void ideal_cache_finish(gcx_tech *t, gcx_tcache *c, uint64_t now)
{
    for (uint32_t line = 0; line < c->c.n_lines; line++)
        if (has_data(c, line))
            gcx_tcache_set_state(c, line, GCX_LINE_OFF, c->c.meta[line].last_access);
}

const gcx_technique gcx_tech_l2_power_ideal_gating = {
    .name = "ideal_gating",
    .doc = "oracle: each L2 line powered only from its fill to its data's true last access (performance of the "
           "baseline)",
    .kind = GCX_TECH_L2_POWER,
    .init = ideal_init,
    .kernel_start = ideal_kernel_start,
    .line_evict = ideal_line_evict,
    .cache_finish = ideal_cache_finish,
};

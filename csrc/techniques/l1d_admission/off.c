/* No L1D at all: every request goes to the L2 and the L1D's leakage is gated for the whole run
 * (AdmL1D's "switch the L1D off for everything" reference point). */
#include "sim/gpu.h"

static int off_init(gcx_tech *t, gcx_error *err)
{
    gcx_gpu *g = t->gpu;
    for (uint32_t i = 0; i < (uint32_t)g->cfg.sms; i++) {
        gcx_tcache *tc = &g->sms[i].l1.tc;
        g->sms[i].l1.off = 1;
        for (uint32_t line = 0; line < tc->c.n_lines; line++)
            gcx_tcache_set_state(tc, line, GCX_LINE_OFF, 0);
    }
    return GCX_OK;
}

const gcx_technique gcx_tech_admission_off = {
    .name = "off",
    .doc = "no L1D: every request bypasses it and its lines are powered off",
    .kind = GCX_TECH_L1D_ADMISSION,
    .init = off_init,
};

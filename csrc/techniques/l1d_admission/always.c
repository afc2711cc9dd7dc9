/* The baseline admission policy: every cacheable request uses the L1D. */
#include "techniques/technique.h"

const gcx_technique gcx_tech_admission_always = {
    .name = "always",
    .doc = "every cacheable request uses the L1D (baseline)",
    .kind = GCX_TECH_L1D_ADMISSION,
};

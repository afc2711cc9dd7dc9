/* The baseline line power policy: every line is ON for the whole run. */
#include "techniques/technique.h"

const gcx_technique gcx_tech_l1d_power_none = {
    .name = "none",
    .doc = "lines always powered (baseline)",
    .kind = GCX_TECH_L1D_POWER,
};

const gcx_technique gcx_tech_l2_power_none = {
    .name = "none",
    .doc = "lines always powered (baseline)",
    .kind = GCX_TECH_L2_POWER,
};

/* The baseline organisation: each SM has its own L1D. */
#include "techniques/technique.h"

const gcx_technique gcx_tech_sharing_private = {
    .name = "private",
    .doc = "each SM has its own L1D (baseline)",
    .kind = GCX_TECH_L1D_SHARING,
};

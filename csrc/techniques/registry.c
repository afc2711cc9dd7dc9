/* The one list of techniques the timing model can be configured with. The first technique of
 * each kind is that kind's baseline (the default). Adding a technique: one file in the folder of
 * its kind, one line here, and its tests. */
#include <string.h>

#include "techniques/technique.h"

extern const gcx_technique gcx_tech_admission_always, gcx_tech_admission_off;
extern const gcx_technique gcx_tech_admission_admL1D;
extern const gcx_technique gcx_tech_l1d_power_none, gcx_tech_l2_power_none;
extern const gcx_technique gcx_tech_l1d_power_drowsy, gcx_tech_l2_power_drowsy;
extern const gcx_technique gcx_tech_l1d_power_decay, gcx_tech_l2_power_decay;
extern const gcx_technique gcx_tech_sharing_private, gcx_tech_sharing_remote, gcx_tech_sharing_decoupled,
    gcx_tech_sharing_ata;
extern const gcx_technique gcx_tech_l2_power_loscache, gcx_tech_l2_power_ideal_gating;

const gcx_technique *const gcx_techniques[] = {
    /* l1d.admission */
    &gcx_tech_admission_always,
    &gcx_tech_admission_off,
    &gcx_tech_admission_admL1D,
    /* l1d.power */
    &gcx_tech_l1d_power_none,
    &gcx_tech_l1d_power_drowsy,
    &gcx_tech_l1d_power_decay,
    /* l2.power */
    &gcx_tech_l2_power_none,
    &gcx_tech_l2_power_drowsy,
    &gcx_tech_l2_power_decay,
    &gcx_tech_l2_power_loscache,
    &gcx_tech_l2_power_ideal_gating,
    /* l1d.sharing */
    &gcx_tech_sharing_private,
    &gcx_tech_sharing_remote,
    &gcx_tech_sharing_decoupled,
    &gcx_tech_sharing_ata,
    NULL,
};

const char *gcx_tech_kind_key(int kind)
{
    static const char *const keys[GCX_N_TECH_KINDS] = {"l1d.admission", "l1d.power", "l2.power", "l1d.sharing"};
    return kind >= 0 && kind < GCX_N_TECH_KINDS ? keys[kind] : "?";
}

const gcx_technique *gcx_technique_find(int kind, const char *name)
{
    for (const gcx_technique *const *t = gcx_techniques; *t; t++)
        if ((*t)->kind == kind && strcmp((*t)->name, name) == 0)
            return *t;
    return NULL;
}

/* The one list of techniques the timing model can be configured with. The first technique of
 * each kind is that kind's baseline (the default). Adding a technique: one file in the folder of
 * its kind, its extern declaration and one line in the list here, and its tests. */
#include <string.h>

#include "sim/config.h"
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

static int same_choices(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A technique's parameters are copied into gcx_tech.params, and the distinct parameters of all
 * techniques into the configuration's param_value: a technique declaring more would have its last
 * ones read as garbage, or written past the configuration, silently. A parameter name is one
 * configuration key whose default, range and type come from its first declaration, so a second
 * technique declaring it otherwise would silently get the first one's. */
int gcx_technique_list_check(const gcx_technique *const *list, gcx_error *err)
{
    int distinct = 0;
    for (const gcx_technique *const *t = list; *t; t++) {
        const char *kind = gcx_tech_kind_key((*t)->kind);
        if ((*t)->n_params < 0 || (*t)->n_params > GCX_TECH_MAX_PARAMS)
            return gcx_fail(err, GCX_ERR_VALUE,
                            "technique '%s' (%s) declares %d parameters; a technique may have at most "
                            "GCX_TECH_MAX_PARAMS = %d (csrc/techniques/technique.h): raise it",
                            (*t)->name, kind, (*t)->n_params, GCX_TECH_MAX_PARAMS);
        for (const gcx_technique *const *u = list; u < t; u++)
            if ((*u)->kind == (*t)->kind && strcmp((*u)->name, (*t)->name) == 0)
                return gcx_fail(err, GCX_ERR_VALUE, "two %s techniques are named '%s': a name selects one technique",
                                kind, (*t)->name);
        for (int p = 0; p < (*t)->n_params; p++) {
            const gcx_param_spec *a = &(*t)->params[p];
            const gcx_param_spec *first = NULL;
            const gcx_technique *owner = NULL;
            for (const gcx_technique *const *u = list; u <= t && !first; u++)
                for (int q = 0; q < (u == t ? p : (*u)->n_params); q++)
                    if (strcmp((*u)->params[q].name, a->name) == 0) {
                        first = &(*u)->params[q];
                        owner = *u;
                        break;
                    }
            if (!first) {
                distinct++;
                continue;
            }
            if (first->default_value != a->default_value || first->min_value != a->min_value ||
                first->max_value != a->max_value || first->is_integer != a->is_integer ||
                !same_choices(gcx_param_choices(owner, (int)(first - owner->params)), gcx_param_choices(*t, p)))
                return gcx_fail(err, GCX_ERR_VALUE,
                                "parameter '%s' is declared by techniques '%s' (%s) and '%s' (%s) with different "
                                "defaults, ranges or types: a shared parameter is one configuration key, so declare "
                                "it the same way in both, or give one another name",
                                a->name, owner->name, gcx_tech_kind_key(owner->kind), (*t)->name, kind);
        }
    }
    if (distinct > GCX_MAX_TECH_PARAMS)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "the techniques declare %d distinct parameters; the configuration keeps at most "
                        "GCX_MAX_TECH_PARAMS = %d (csrc/sim/config.h): raise it",
                        distinct, GCX_MAX_TECH_PARAMS);
    return GCX_OK;
}

/* Unit tests of the registries' contract: the policies and techniques the core lists fit its
 * fixed arrays, and a list that would not is refused with a message naming the limit. */
#include "check.h"
#include "policies/policies.h"
#include "sim/config.h"
#include "techniques/technique.h"

static void lru_touch(gcx_cache *c, uint32_t line) { c->repl[line] = gcx_next_stamp(c); }
static uint32_t lru_victim(gcx_cache *c, uint32_t set, uint64_t candidates)
{
    return gcx_policy_min_repl(c, set, candidates);
}

static const gcx_param_spec five[] = {
    {"a", "", 1, 0, 9, 1}, {"b", "", 2, 0, 9, 1}, {"c", "", 3, 0, 9, 1}, {"d", "", 4, 0, 9, 1}, {"e", "", 5, 0, 9, 1},
};

static void test_the_registries_fit(void)
{
    gcx_error err;
    CHECK_EQ(gcx_policy_list_check(gcx_policies, &err), GCX_OK);
    CHECK_EQ(gcx_technique_list_check(gcx_techniques, &err), GCX_OK);
}

static void test_a_policy_with_too_many_parameters_is_refused(void)
{
    gcx_error err;
    const gcx_policy four = {.name = "four", .params = five, .n_params = 4, .on_hit = lru_touch,
                             .on_fill = lru_touch, .victim = lru_victim};
    const gcx_policy many = {.name = "many", .params = five, .n_params = 5, .on_hit = lru_touch,
                             .on_fill = lru_touch, .victim = lru_victim};
    const gcx_policy *ok[] = {&gcx_policy_lru, &four, NULL};
    CHECK_EQ(gcx_policy_list_check(ok, &err), GCX_OK);
    const gcx_policy *bad[] = {&gcx_policy_lru, &many, NULL};
    CHECK_EQ(gcx_policy_list_check(bad, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "'many' declares 5 parameters") && strstr(err.msg, "GCX_MAX_POLICY_PARAMS = 4"));
    const gcx_policy *twice[] = {&gcx_policy_lru, &gcx_policy_fifo, &gcx_policy_lru, NULL};
    CHECK_EQ(gcx_policy_list_check(twice, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "two replacement policies are named 'lru'") != NULL);
}

static void test_a_technique_the_configuration_cannot_hold_is_refused(void)
{
    gcx_error err;
    gcx_param_spec many[GCX_TECH_MAX_PARAMS + 1];
    char names[GCX_TECH_MAX_PARAMS + 1][32];
    for (int i = 0; i <= GCX_TECH_MAX_PARAMS; i++) {
        snprintf(names[i], sizeof names[i], "l2.big.p%d", i);
        many[i] = (gcx_param_spec){names[i], "", 0, 0, 1, 1};
    }
    gcx_technique big = {.name = "big", .kind = GCX_TECH_L2_POWER, .params = many, .n_params = GCX_TECH_MAX_PARAMS};
    const gcx_technique *list[] = {&big, NULL};
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_OK);
    big.n_params = GCX_TECH_MAX_PARAMS + 1;
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "'big' (l2.power) declares 17 parameters") != NULL);

    /* More distinct parameters over the list than the configuration keeps. */
    big.n_params = GCX_TECH_MAX_PARAMS;
    gcx_technique copies[GCX_MAX_TECH_PARAMS / GCX_TECH_MAX_PARAMS + 1];
    char copy_names[GCX_MAX_TECH_PARAMS / GCX_TECH_MAX_PARAMS + 1][GCX_TECH_MAX_PARAMS][32];
    gcx_param_spec copy_params[GCX_MAX_TECH_PARAMS / GCX_TECH_MAX_PARAMS + 1][GCX_TECH_MAX_PARAMS];
    const gcx_technique *all[GCX_MAX_TECH_PARAMS / GCX_TECH_MAX_PARAMS + 2];
    size_t n = sizeof copies / sizeof copies[0];
    for (size_t k = 0; k < n; k++) {
        for (int i = 0; i < GCX_TECH_MAX_PARAMS; i++) {
            snprintf(copy_names[k][i], sizeof copy_names[k][i], "l2.t%zu.p%d", k, i);
            copy_params[k][i] = (gcx_param_spec){copy_names[k][i], "", 0, 0, 1, 1};
        }
        copies[k] = (gcx_technique){.name = copy_names[k][0], .kind = GCX_TECH_L2_POWER, .params = copy_params[k],
                                    .n_params = GCX_TECH_MAX_PARAMS};
        all[k] = &copies[k];
    }
    all[n] = NULL;
    CHECK_EQ(gcx_technique_list_check(all, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "GCX_MAX_TECH_PARAMS") != NULL);
    all[n - 1] = NULL; /* exactly the limit */
    CHECK_EQ(gcx_technique_list_check(all, &err), GCX_OK);
}

static void test_a_shared_parameter_must_be_declared_the_same_way(void)
{
    gcx_error err;
    const gcx_param_spec interval = {"decay.interval", "", 8192, 1, 1e12, 1};
    const gcx_param_spec other = {"decay.interval", "", 1024, 1, 1e12, 1};
    const gcx_technique l1 = {.name = "decay", .kind = GCX_TECH_L1D_POWER, .params = &interval, .n_params = 1};
    gcx_technique l2 = {.name = "decay2", .kind = GCX_TECH_L2_POWER, .params = &interval, .n_params = 1};
    const gcx_technique *list[] = {&l1, &l2, NULL};
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_OK);
    l2.params = &other;
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "'decay.interval' is declared by techniques 'decay' (l1d.power) and 'decay2' (l2.power)"));
    /* The same name in two kinds is two techniques; twice in one kind is an error. */
    l2.params = &interval;
    l2.name = "decay";
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_OK);
    l2.kind = GCX_TECH_L1D_POWER;
    CHECK_EQ(gcx_technique_list_check(list, &err), GCX_ERR_VALUE);
    CHECK(strstr(err.msg, "two l1d.power techniques are named 'decay'") != NULL);
}

int main(void)
{
    RUN(test_the_registries_fit);
    RUN(test_a_policy_with_too_many_parameters_is_refused);
    RUN(test_a_technique_the_configuration_cannot_hold_is_refused);
    RUN(test_a_shared_parameter_must_be_declared_the_same_way);
    return CHECK_SUMMARY();
}

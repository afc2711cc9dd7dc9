/* The registry of replacement policies: one line per policy in registry.c. Adding a policy is
 * one new file here implementing gcx_policy's hooks, its extern below (registry.c needs it), one
 * registry line, and its tests. */
#ifndef GCX_POLICIES_H
#define GCX_POLICIES_H

#include "cache/cache.h"

extern const gcx_policy gcx_policy_lru;
extern const gcx_policy gcx_policy_fifo;
extern const gcx_policy gcx_policy_random;
extern const gcx_policy gcx_policy_srrip;

/* NULL-terminated list of every policy, in the order they are documented. */
extern const gcx_policy *const gcx_policies[];

/* Fill params[] with the policy's declared defaults. */
void gcx_policy_defaults(const gcx_policy *p, double *params);

/* The policy called `name`, or NULL. */
const gcx_policy *gcx_policy_find(const char *name);

/* Whether a NULL-terminated list of policies (gcx_policies, or a test's) fits what the core keeps:
 * each name once, at most GCX_MAX_POLICIES policies and GCX_MAX_POLICY_PARAMS parameters each
 * (cache/cache.h). GCX_OK, or GCX_ERR_VALUE saying what to change. */
int gcx_policy_list_check(const gcx_policy *const *list, gcx_error *err);

/* Shared victim search: the candidate way whose repl[] value is smallest (lowest way on ties). */
uint32_t gcx_policy_min_repl(const gcx_cache *c, uint32_t set, uint64_t candidates);

#endif

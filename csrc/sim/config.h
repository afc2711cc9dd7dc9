/* The configuration of a simulated GPU: one struct, and one table (config.c) that names every
 * key, its type, default, range and meaning. The binding fills the struct from a dict of dotted
 * keys through the table, and Python learns the schema from it, so a key is declared once.
 * Defaults describe GPGPU-Sim's GTX 480 (Fermi) configuration; presets override them. */
#ifndef GCX_SIM_CONFIG_H
#define GCX_SIM_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "gcx.h"

enum gcx_key_type {
    GCX_KEY_INT,
    GCX_KEY_FLOAT,
    GCX_KEY_BOOL,
    GCX_KEY_CHOICE,    /* one of a fixed list of names, stored as its index */
    GCX_KEY_POLICY,    /* a replacement policy name from policies/registry.c, stored as its index */
    GCX_KEY_TECHNIQUE, /* a technique name of the key's kind from techniques/registry.c, stored as its index */
};

enum gcx_scheduler { GCX_SCHED_LRR = 0, GCX_SCHED_GTO = 1, GCX_SCHED_TWO_LEVEL = 2 };
enum gcx_dram_model { GCX_DRAM_SIMPLE = 0, GCX_DRAM_FRFCFS = 1 };
enum gcx_index_choice { GCX_INDEX_CHOICE_MOD = 0, GCX_INDEX_CHOICE_XOR = 1, GCX_INDEX_CHOICE_FERMI = 2 };
enum gcx_allocate { GCX_ALLOC_ON_MISS = 0, GCX_ALLOC_ON_FILL = 1 };

/* Per-class execution: latency (cycles until the result can be used) and initiation interval
 * (cycles the scheduler's unit stays busy). Indexed by OpClass for the non-memory classes. */
#define GCX_N_EXEC_CLASSES 7 /* alu, sfu, fp64, tensor, branch, barrier, exit */
#define GCX_MAX_TECH_PARAMS 64

typedef struct gcx_gpu_config {
    /* core */
    int64_t sms;
    int64_t max_threads_per_sm, max_ctas_per_sm, max_warps_per_sm, registers_per_sm, shmem_per_sm;
    int64_t schedulers_per_sm;
    int64_t scheduler;        /* enum gcx_scheduler */
    int64_t two_level_active; /* warps in the active set of each two-level scheduler */
    int64_t latency[GCX_N_EXEC_CLASSES];
    int64_t initiation[GCX_N_EXEC_CLASSES];
    int64_t const_latency;    /* constant-cache load */
    int64_t smem_latency, smem_banks;
    int64_t ldst_queue;       /* memory instructions the LD/ST unit can hold */
    int64_t store_acks;       /* a warp finishes only once the L2 has acknowledged its stores */
    double l1i_size_kb;       /* 0: perfect instruction cache */
    int64_t l1i_ways, l1i_line_bytes, l1i_mshr_entries;
    double clock_mhz;
    /* L1D */
    double l1d_size_kb;
    int64_t l1d_ways, l1d_line_bytes, l1d_sector_bytes, l1d_index, l1d_policy;
    int64_t l1d_mshr_entries, l1d_mshr_merge, l1d_miss_queue, l1d_hit_latency, l1d_banks;
    int64_t l1d_cache_global; /* cache global loads in L1D (0: they go straight to L2, like -dlcm=cg) */
    int64_t l1d_latency_queue; /* tags checked at the end of the L1D's latency pipeline (GPGPU-Sim 4.0) */
    int64_t l1d_store_blocked_by_reserved_set; /* GPGPU-Sim 3.x: a store missing in a fully reserved set waits */
    int64_t l1d_allocate;     /* enum gcx_allocate */
    int64_t l1d_admission, l1d_power, l1d_sharing, l1d_cluster_size, l1d_dwl;
    int64_t cluster_latency, cluster_flits_per_cycle;
    /* interconnect */
    int64_t icnt_latency, icnt_flit_bytes, icnt_flits_per_cycle, icnt_buffer;
    /* L2 */
    double l2_size_kb;
    int64_t l2_partitions, l2_ways, l2_line_bytes, l2_sector_bytes, l2_index, l2_policy;
    int64_t l2_interleave_bytes, l2_mshr_entries, l2_mshr_merge, l2_latency, l2_queue;
    int64_t l2_power, l2_dwl, l2_prefill;
    /* DRAM */
    int64_t dram_channels, dram_model, dram_latency, dram_latency_jitter, dram_queue;
    double dram_bytes_per_cycle;
    int64_t dram_banks, dram_row_bytes, dram_t_cl, dram_t_rcd, dram_t_rp;
    /* simulation */
    int64_t timeseries_interval, max_cycles, deadlock_cycles;
    /* Technique parameters, declared by the techniques themselves (techniques/registry.c):
     * param_value[i] belongs to the i-th parameter in registry order. */
    double param_value[GCX_MAX_TECH_PARAMS];
    /* Replacement-policy parameters, declared by the policies (policies/registry.c), for each cache
     * level that picks a policy: policy_param[level][policy][i] is key "<level>.<policy>.<param i>",
     * level 0 "l1d", 1 "l2" (gcx_policy_levels). Only the level's chosen policy reads its own. */
    double policy_param[2][GCX_MAX_POLICIES][GCX_MAX_POLICY_PARAMS];
} gcx_gpu_config;

/* The cache levels whose policies take parameters, as key prefixes: "l1d", "l2". */
extern const char *const gcx_policy_levels[2];

typedef struct gcx_key {
    const char *name;
    int type;            /* enum gcx_key_type */
    size_t offset;       /* into gcx_gpu_config */
    double default_value;
    double min_value, max_value;
    const char *choices; /* GCX_KEY_CHOICE: comma-separated names; GCX_KEY_TECHNIQUE: the kind */
    const char *doc;
} gcx_key;

/* The core's keys (technique parameters are listed by the technique registry). */
extern const gcx_key gcx_core_keys[];
extern const size_t gcx_n_core_keys;
const gcx_key *gcx_config_find(const char *name);

void gcx_config_defaults(gcx_gpu_config *cfg);
/* Set a numeric key (INT, FLOAT, BOOL) after checking type and range. */
int gcx_config_set_number(gcx_gpu_config *cfg, const gcx_key *key, double value, gcx_error *err);
/* Set a CHOICE, POLICY or TECHNIQUE key by name. */
int gcx_config_set_name(gcx_gpu_config *cfg, const gcx_key *key, const char *value, gcx_error *err);
/* Set a technique parameter by its full name; GCX_ERR_VALUE if no technique declares it. */
int gcx_config_set_param(gcx_gpu_config *cfg, const char *name, double value, gcx_error *err);
/* Index of `value` in a comma-separated list of names, or -1. */
int gcx_choice_index(const char *choices, const char *value);
/* Set a technique parameter that takes a name (gcx_technique.param_choices) by that name. */
int gcx_config_set_param_name(gcx_gpu_config *cfg, const char *name, const char *value, gcx_error *err);
/* A technique parameter's value (its default unless set; a choice parameter's index). */
double gcx_config_param(const gcx_gpu_config *cfg, const char *name);

/* Consistency checks across keys (geometry divisibility and the like). */
int gcx_config_check(const gcx_gpu_config *cfg, gcx_error *err);

static inline int64_t *gcx_config_int(gcx_gpu_config *cfg, const gcx_key *k)
{
    return (int64_t *)((char *)cfg + k->offset);
}

static inline double *gcx_config_float(gcx_gpu_config *cfg, const gcx_key *k)
{
    return (double *)((char *)cfg + k->offset);
}

#endif

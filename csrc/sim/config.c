/* The configuration key table of the timing model and its validation. Defaults are GPGPU-Sim's
 * GTX 480 (Fermi) configuration, the baseline of the LoSCache, AdmL1D and drowsy-cache papers. */
#include "sim/config.h"

#include <math.h>
#include <string.h>

#include "policies/policies.h"
#include "techniques/technique.h"

#define K_INT(name, field, def, lo, hi, doc) {name, GCX_KEY_INT, offsetof(gcx_gpu_config, field), def, lo, hi, NULL, doc}
#define K_FLT(name, field, def, lo, hi, doc) {name, GCX_KEY_FLOAT, offsetof(gcx_gpu_config, field), def, lo, hi, NULL, doc}
#define K_BOOL(name, field, def, doc) {name, GCX_KEY_BOOL, offsetof(gcx_gpu_config, field), def, 0, 1, NULL, doc}
#define K_CHOICE(name, field, def, choices, doc)                                                   \
    {name, GCX_KEY_CHOICE, offsetof(gcx_gpu_config, field), def, 0, 0, choices, doc}
#define K_POLICY(name, field, doc) {name, GCX_KEY_POLICY, offsetof(gcx_gpu_config, field), 0, 0, 0, NULL, doc}
#define K_TECH(name, field, kind, doc) {name, GCX_KEY_TECHNIQUE, offsetof(gcx_gpu_config, field), 0, 0, 0, kind, doc}
#define BIG 1e12

const gcx_key gcx_core_keys[] = {
    K_INT("core.sms", sms, 15, 1, 1024, "streaming multiprocessors"),
    K_INT("core.max_threads", max_threads_per_sm, 1536, 32, 65536, "resident threads per SM"),
    K_INT("core.max_ctas", max_ctas_per_sm, 8, 1, 256, "resident CTAs per SM"),
    K_INT("core.max_warps", max_warps_per_sm, 48, 1, 2048, "resident warps per SM"),
    K_INT("core.registers", registers_per_sm, 32768, 1, 1 << 24, "32-bit registers per SM"),
    K_INT("core.shmem_bytes", shmem_per_sm, 49152, 0, 1 << 24, "shared memory per SM in bytes"),
    K_INT("core.schedulers", schedulers_per_sm, 2, 1, 16, "warp schedulers per SM (each issues one instruction a cycle)"),
    K_CHOICE("core.scheduler", scheduler, GCX_SCHED_GTO, "lrr,gto,two_level",
             "warp scheduling policy: loose round robin, greedy-then-oldest, or two-level (active set + pending)"),
    K_INT("core.two_level_active", two_level_active, 8, 1, 2048, "warps in each two-level scheduler's active set"),
    K_INT("core.alu_latency", latency[0], 4, 0, 100000, "cycles until an ALU result can be used"),
    K_INT("core.sfu_latency", latency[1], 20, 0, 100000, "cycles until an SFU result can be used"),
    K_INT("core.fp64_latency", latency[2], 8, 0, 100000, "cycles until a double-precision result can be used"),
    K_INT("core.tensor_latency", latency[3], 32, 0, 100000, "cycles until a tensor-core result can be used"),
    K_INT("core.branch_latency", latency[4], 4, 0, 100000, "cycles a branch occupies its warp"),
    K_INT("core.barrier_latency", latency[5], 1, 0, 100000, "cycles after a barrier releases"),
    K_INT("core.exit_latency", latency[6], 1, 0, 100000, "cycles of an exit instruction"),
    K_INT("core.alu_interval", initiation[0], 1, 1, 100000, "cycles a scheduler's ALU pipeline stays busy per instruction"),
    K_INT("core.sfu_interval", initiation[1], 4, 1, 100000, "cycles a scheduler's SFU stays busy per instruction"),
    K_INT("core.fp64_interval", initiation[2], 2, 1, 100000, "cycles a scheduler's FP64 unit stays busy per instruction"),
    K_INT("core.tensor_interval", initiation[3], 8, 1, 100000, "cycles a scheduler's tensor unit stays busy per instruction"),
    K_INT("core.branch_interval", initiation[4], 1, 1, 100000, "cycles a branch keeps the scheduler's branch unit busy"),
    K_INT("core.barrier_interval", initiation[5], 1, 1, 100000, "issue interval of barriers"),
    K_INT("core.exit_interval", initiation[6], 1, 1, 100000, "issue interval of exits"),
    K_INT("core.const_latency", const_latency, 8, 0, 100000, "cycles of a constant-cache load (constant loads carry no addresses)"),
    K_INT("core.smem_latency", smem_latency, 24, 0, 100000, "cycles of a conflict-free shared-memory access"),
    K_INT("core.smem_banks", smem_banks, 32, 1, 1024, "shared-memory banks (4-byte wide)"),
    K_INT("core.ldst_queue", ldst_queue, 2, 1, 1024, "memory instructions the LD/ST unit holds (issue stalls when full)"),
    K_BOOL("core.store_acks", store_acks, 1, "a warp finishes only once every store it sent below the L1D is acknowledged (GPGPU-Sim's WRITE_ACK)"),
    K_FLT("core.clock_mhz", clock_mhz, 700, 1, 100000, "core clock, for times and powers"),
    K_FLT("l1i.size_kb", l1i_size_kb, 2, 0, 1 << 20,
          "L1 instruction cache per SM in KB (0: perfect, no instruction fetch traffic)"),
    K_INT("l1i.ways", l1i_ways, 4, 1, 64, "L1 instruction cache associativity"),
    K_INT("l1i.line_bytes", l1i_line_bytes, 128, 32, 256, "L1 instruction cache line size"),
    K_INT("l1i.mshr_entries", l1i_mshr_entries, 2, 1, 64, "instruction lines an SM can be fetching at once"),

    K_FLT("l1d.size_kb", l1d_size_kb, 16, 0.03125, 1 << 20, "L1D capacity per SM in KB"),
    K_INT("l1d.ways", l1d_ways, 4, 1, 64, "L1D associativity"),
    K_INT("l1d.line_bytes", l1d_line_bytes, 128, 32, 256, "L1D line size"),
    K_INT("l1d.sector_bytes", l1d_sector_bytes, 0, 0, 256, "L1D sector size (0: not sectored)"),
    K_CHOICE("l1d.index", l1d_index, GCX_INDEX_CHOICE_MOD, "mod,xor,fermi",
             "L1D set index: line mod sets, xor-hashed, or GPGPU-Sim's Fermi hash (32 or 64 sets)"),
    K_POLICY("l1d.policy", l1d_policy, "L1D replacement policy"),
    K_INT("l1d.mshr_entries", l1d_mshr_entries, 32, 1, 4096, "L1D miss status holding registers"),
    K_INT("l1d.mshr_merge", l1d_mshr_merge, 8, 1, 1024, "requests one L1D MSHR entry can hold (merged misses)"),
    K_INT("l1d.miss_queue", l1d_miss_queue, 8, 2, 4096,
          "L1D miss queue entries towards the interconnect (at least 2: a miss that evicts a dirty line "
          "queues its fetch and the write-back)"),
    K_INT("l1d.hit_latency", l1d_hit_latency, 20, 0, 100000, "cycles of an L1D hit"),
    K_INT("l1d.banks", l1d_banks, 1, 1, 64, "L1D data-array banks (each serves one access a cycle)"),
    K_BOOL("l1d.latency_queue", l1d_latency_queue, 0,
           "check the tags at the end of a latency pipeline of hit_latency cycles per L1D bank, so misses spend "
           "the hit latency in the L1D too, and hand over up to one request per bank a cycle, as GPGPU-Sim 4.0's "
           "l1_latency_queue (false: one request a cycle, tags checked at hand-over, a miss leaves the next "
           "cycle, as GPGPU-Sim 3.x)"),
    K_BOOL("l1d.store_blocked_by_reserved_set", l1d_store_blocked_by_reserved_set, 0,
           "a store that misses in a set whose every line is being fetched is refused (a line-allocation fail) "
           "until a line is filled, as in GPGPU-Sim 3.x, whose tag probe refuses it before the write-miss "
           "handler (false: it goes to the L2 at once, as GPGPU-Sim 4.x lets stores that allocate nothing pass)"),
    K_CHOICE("l1d.allocate", l1d_allocate, GCX_ALLOC_ON_MISS, "miss,fill",
             "when a missing line gets its place: miss (reserved at the miss, as in GPGPU-Sim's Fermi L1D; "
             "reserved lines cause line-allocation fails) or fill (chosen when the data arrives)"),
    K_BOOL("l1d.cache_global", l1d_cache_global, 1, "cache global loads in the L1D (false: like -dlcm=cg, only local memory is cached)"),
    K_TECH("l1d.admission", l1d_admission, "l1d.admission", "which requests use the L1D: always, off (no L1D), admL1D"),
    K_TECH("l1d.power", l1d_power, "l1d.power", "line power technique of the L1Ds"),
    K_TECH("l1d.sharing", l1d_sharing, "l1d.sharing", "L1D sharing among the SMs of a cluster"),
    K_INT("l1d.cluster_size", l1d_cluster_size, 1, 1, 1024, "consecutive SMs whose L1Ds form a cluster (1: private)"),
    K_BOOL("l1d.dwl", l1d_dwl, 0, "divided word line in the L1D data arrays (energy model only)"),
    K_INT("cluster.latency", cluster_latency, 4, 0, 100000, "cycles across the cluster network or crossbar"),
    K_INT("cluster.flits_per_cycle", cluster_flits_per_cycle, 1, 1, 1024, "flits per cycle per cluster-network port"),

    K_INT("icnt.latency", icnt_latency, 8, 0, 100000, "cycles across the SM-to-L2 crossbar"),
    K_INT("icnt.flit_bytes", icnt_flit_bytes, 32, 4, 1024, "crossbar flit size"),
    K_INT("icnt.flits_per_cycle", icnt_flits_per_cycle, 1, 1, 1024, "flits per cycle per crossbar port"),
    K_INT("icnt.buffer", icnt_buffer, 64, 1, 1 << 20, "packets buffered towards each crossbar destination"),

    K_FLT("l2.size_kb", l2_size_kb, 768, 1, 1 << 24, "total L2 capacity in KB (split over the partitions)"),
    K_INT("l2.partitions", l2_partitions, 6, 1, 1024, "L2 sub-partitions (banks), each a separate cache slice"),
    K_INT("l2.ways", l2_ways, 16, 1, 64, "L2 associativity"),
    K_INT("l2.line_bytes", l2_line_bytes, 128, 32, 256, "L2 line size"),
    K_INT("l2.sector_bytes", l2_sector_bytes, 0, 0, 256, "L2 sector size (0: not sectored)"),
    K_CHOICE("l2.index", l2_index, GCX_INDEX_CHOICE_MOD, "mod,xor", "L2 set index within a partition"),
    K_POLICY("l2.policy", l2_policy, "L2 replacement policy"),
    K_INT("l2.interleave_bytes", l2_interleave_bytes, 256, 32, 1 << 20, "address interleaving granularity across partitions"),
    K_INT("l2.mshr_entries", l2_mshr_entries, 32, 1, 65536, "MSHR entries per L2 partition"),
    K_INT("l2.mshr_merge", l2_mshr_merge, 4, 1, 65536, "requests one L2 MSHR entry can hold"),
    K_INT("l2.latency", l2_latency, 100, 0, 100000, "cycles from a partition accepting a request to its hit response"),
    K_INT("l2.queue", l2_queue, 64, 1, 1 << 20, "answers a partition holds beyond its latency pipeline, waiting for the crossbar"),
    K_TECH("l2.power", l2_power, "l2.power", "line power technique of the L2"),
    K_BOOL("l2.dwl", l2_dwl, 0, "divided word line in the L2 data arrays (energy model only)"),
    K_BOOL("l2.prefill", l2_prefill, 0, "fill the L2 with MemcpyHtoD data before kernels (GPGPU-Sim perf_sim_memcpy)"),

    K_INT("dram.channels", dram_channels, 6, 1, 1024, "DRAM channels (memory controllers)"),
    K_CHOICE("dram.model", dram_model, GCX_DRAM_FRFCFS, "simple,frfcfs",
             "simple: fixed latency and bandwidth; frfcfs: banks with row buffers, first-ready first-come-first-served"),
    K_INT("dram.latency", dram_latency, 100, 0, 100000, "cycles of a DRAM access beyond bank timing"),
    K_INT("dram.latency_jitter", dram_latency_jitter, 0, 0, 100000,
          "extra cycles, drawn from 0 to this uniformly for each DRAM access from the run's seed: a small "
          "random perturbation that makes runs with different seeds take different paths, to measure "
          "run-to-run variability (Alameldeen and Wood, HPCA 2003); 0 adds nothing"),
    K_INT("dram.queue", dram_queue, 16, 2, 1 << 20,
          "requests each channel's scheduler holds (at least 2: an L2 miss needs room for its fetch and a "
          "dirty victim's write-back)"),
    K_FLT("dram.bytes_per_cycle", dram_bytes_per_cycle, 42.2, 0.01, 1e6, "data bus bandwidth per channel in bytes per core cycle"),
    K_INT("dram.banks", dram_banks, 16, 1, 1024, "banks per channel (frfcfs)"),
    K_INT("dram.row_bytes", dram_row_bytes, 2048, 128, 1 << 20, "row buffer size per bank (frfcfs)"),
    K_INT("dram.t_cl", dram_t_cl, 9, 0, 100000, "column access latency in core cycles (frfcfs)"),
    K_INT("dram.t_rcd", dram_t_rcd, 9, 0, 100000, "row activate to column access in core cycles (frfcfs)"),
    K_INT("dram.t_rp", dram_t_rp, 9, 0, 100000, "row precharge in core cycles (frfcfs)"),

    K_INT("sim.timeseries_interval", timeseries_interval, 1000, 1, 1 << 30, "cycles between time-series samples"),
    K_INT("sim.max_cycles", max_cycles, 0, 0, BIG, "stop with an error after this many cycles (0: no limit)"),
    K_INT("sim.deadlock_cycles", deadlock_cycles, 1000000, 1000, BIG, "cycles without progress that count as a deadlock"),
};

const size_t gcx_n_core_keys = sizeof gcx_core_keys / sizeof *gcx_core_keys;

const gcx_key *gcx_config_find(const char *name)
{
    for (size_t i = 0; i < gcx_n_core_keys; i++)
        if (strcmp(gcx_core_keys[i].name, name) == 0)
            return &gcx_core_keys[i];
    return NULL;
}

/* Techniques may share a parameter (drowsy.window applies to the L1D and the L2 variants of the
 * drowsy technique): a name is one configuration key, its value stored once, at the place of its
 * first declaration in registry order. Later declarations of the name are the same key. */
static int declared_earlier(const gcx_technique *const *t, int p)
{
    const char *name = (*t)->params[p].name;
    for (const gcx_technique *const *u = gcx_techniques; u <= t; u++)
        for (int q = 0; q < (u == t ? p : (*u)->n_params); q++)
            if (strcmp((*u)->params[q].name, name) == 0)
                return 1;
    return 0;
}

/* The i-th distinct technique parameter in registry order, and its names if it takes one (else NULL). */
static const gcx_param_spec *param_at(size_t i, const char **choices)
{
    size_t k = 0;
    for (const gcx_technique *const *t = gcx_techniques; *t; t++)
        for (int p = 0; p < (*t)->n_params; p++) {
            if (declared_earlier(t, p))
                continue;
            if (k++ == i) {
                if (choices)
                    *choices = gcx_param_choices(*t, p);
                return &(*t)->params[p];
            }
        }
    return NULL;
}

int gcx_choice_index(const char *choices, const char *value)
{
    if (!choices || !value)
        return -1;
    size_t len = strlen(value);
    int idx = 0;
    for (const char *p = choices; *p; idx++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, value, n) == 0)
            return idx;
        if (!end)
            break;
        p = end + 1;
    }
    return -1;
}

static int param_index(const char *name)
{
    size_t k = 0;
    for (const gcx_technique *const *t = gcx_techniques; *t; t++)
        for (int p = 0; p < (*t)->n_params; p++) {
            if (declared_earlier(t, p))
                continue;
            if (strcmp((*t)->params[p].name, name) == 0)
                return (int)k;
            k++;
        }
    return -1;
}

static int technique_index(int kind, const char *name)
{
    int idx = 0;
    for (const gcx_technique *const *t = gcx_techniques; *t; t++, idx++)
        if ((*t)->kind == kind && strcmp((*t)->name, name) == 0)
            return idx;
    return -1;
}

static int kind_of_key(const gcx_key *key)
{
    for (int k = 0; k < GCX_N_TECH_KINDS; k++)
        if (strcmp(gcx_tech_kind_key(k), key->choices) == 0)
            return k;
    return -1;
}

void gcx_config_defaults(gcx_gpu_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < gcx_n_core_keys; i++) {
        const gcx_key *k = &gcx_core_keys[i];
        switch (k->type) {
        case GCX_KEY_FLOAT:
            *gcx_config_float(cfg, k) = k->default_value;
            break;
        case GCX_KEY_POLICY:
            *gcx_config_int(cfg, k) = 0; /* the first policy: lru */
            break;
        case GCX_KEY_TECHNIQUE: {
            /* The first technique of the kind in the registry is the baseline. */
            int kind = kind_of_key(k), idx = 0;
            for (const gcx_technique *const *t = gcx_techniques; *t; t++, idx++)
                if ((*t)->kind == kind)
                    break;
            *gcx_config_int(cfg, k) = idx;
            break;
        }
        default:
            *gcx_config_int(cfg, k) = (int64_t)k->default_value;
        }
    }
    for (size_t i = 0; i < GCX_MAX_TECH_PARAMS; i++) {
        const gcx_param_spec *p = param_at(i, NULL);
        if (!p)
            break;
        cfg->param_value[i] = p->default_value;
    }
    for (int lv = 0; lv < 2; lv++)
        for (int pi = 0; gcx_policies[pi]; pi++)
            gcx_policy_defaults(gcx_policies[pi], cfg->policy_param[lv][pi]);
}

const char *const gcx_policy_levels[2] = {"l1d", "l2"};

/* The replacement-policy parameter called `name` ("<level>.<policy>.<param>"): its spec and where
 * its value is kept, or NULL. */
static const gcx_param_spec *policy_param_of(gcx_gpu_config *cfg, const char *name, double **value)
{
    for (int lv = 0; lv < 2; lv++) {
        size_t n = strlen(gcx_policy_levels[lv]);
        if (strncmp(name, gcx_policy_levels[lv], n) != 0 || name[n] != '.')
            continue;
        const char *rest = name + n + 1;
        for (int pi = 0; gcx_policies[pi]; pi++) {
            const gcx_policy *pol = gcx_policies[pi];
            size_t m = strlen(pol->name);
            if (strncmp(rest, pol->name, m) != 0 || rest[m] != '.')
                continue;
            for (int q = 0; q < pol->n_params; q++)
                if (strcmp(rest + m + 1, pol->params[q].name) == 0) {
                    *value = &cfg->policy_param[lv][pi][q];
                    return &pol->params[q];
                }
        }
    }
    return NULL;
}

int gcx_config_set_number(gcx_gpu_config *cfg, const gcx_key *key, double value, gcx_error *err)
{
    if (key->type != GCX_KEY_INT && key->type != GCX_KEY_FLOAT && key->type != GCX_KEY_BOOL)
        return gcx_fail(err, GCX_ERR_VALUE, "%s expects a name, got the number %s", key->name, gcx_num(value).s);
    int rc = gcx_check_number("", key->name, value, key->min_value, key->max_value, key->type != GCX_KEY_FLOAT, err);
    if (rc != GCX_OK)
        return rc;
    if (key->type == GCX_KEY_FLOAT)
        *gcx_config_float(cfg, key) = value;
    else
        *gcx_config_int(cfg, key) = (int64_t)value;
    return GCX_OK;
}

int gcx_config_set_name(gcx_gpu_config *cfg, const gcx_key *key, const char *value, gcx_error *err)
{
    if (key->type == GCX_KEY_CHOICE) {
        int idx = 0;
        const char *p = key->choices;
        size_t len = strlen(value);
        while (*p) {
            const char *end = strchr(p, ',');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            if (n == len && strncmp(p, value, n) == 0) {
                *gcx_config_int(cfg, key) = idx;
                return GCX_OK;
            }
            idx++;
            p += n + (end ? 1 : 0);
        }
        return gcx_fail(err, GCX_ERR_VALUE, "%s must be one of %s, got '%s'", key->name, key->choices, value);
    }
    if (key->type == GCX_KEY_POLICY) {
        int idx = 0;
        for (const gcx_policy *const *p = gcx_policies; *p; p++, idx++)
            if (strcmp((*p)->name, value) == 0) {
                *gcx_config_int(cfg, key) = idx;
                return GCX_OK;
            }
        return gcx_fail(err, GCX_ERR_VALUE, "%s: unknown replacement policy '%s'", key->name, value);
    }
    if (key->type == GCX_KEY_TECHNIQUE) {
        int idx = technique_index(kind_of_key(key), value);
        if (idx < 0) {
            char known[256] = "";
            for (const gcx_technique *const *t = gcx_techniques; *t; t++)
                if ((*t)->kind == kind_of_key(key)) {
                    if (known[0])
                        strncat(known, ", ", sizeof known - strlen(known) - 1);
                    strncat(known, (*t)->name, sizeof known - strlen(known) - 1);
                }
            return gcx_fail(err, GCX_ERR_VALUE, "%s: unknown technique '%s' (known: %s)", key->name, value, known);
        }
        *gcx_config_int(cfg, key) = idx;
        return GCX_OK;
    }
    return gcx_fail(err, GCX_ERR_VALUE, "%s expects a number, got '%s'", key->name, value);
}

int gcx_config_set_param(gcx_gpu_config *cfg, const char *name, double value, gcx_error *err)
{
    double *slot;
    const gcx_param_spec *pp = policy_param_of(cfg, name, &slot);
    if (pp) {
        int rc = gcx_check_number("", name, value, pp->min_value, pp->max_value, pp->is_integer, err);
        if (rc == GCX_OK)
            *slot = value;
        return rc;
    }
    int i = param_index(name);
    if (i < 0)
        return gcx_fail(err, GCX_ERR_VALUE, "unknown configuration key '%s'", name);
    const char *choices;
    const gcx_param_spec *p = param_at((size_t)i, &choices);
    if (choices)
        return gcx_fail(err, GCX_ERR_VALUE, "%s must be one of %s, got the number %s", name, choices, gcx_num(value).s);
    int rc = gcx_check_number("", name, value, p->min_value, p->max_value, p->is_integer, err);
    if (rc == GCX_OK)
        cfg->param_value[i] = value;
    return rc;
}

int gcx_config_set_param_name(gcx_gpu_config *cfg, const char *name, const char *value, gcx_error *err)
{
    double *slot;
    if (policy_param_of(cfg, name, &slot))
        return gcx_fail(err, GCX_ERR_VALUE, "%s expects a number, got '%s'", name, value);
    int i = param_index(name);
    if (i < 0)
        return gcx_fail(err, GCX_ERR_VALUE, "unknown configuration key '%s'", name);
    const char *choices;
    param_at((size_t)i, &choices);
    if (!choices)
        return gcx_fail(err, GCX_ERR_VALUE, "%s expects a number, got '%s'", name, value);
    int idx = gcx_choice_index(choices, value);
    if (idx < 0)
        return gcx_fail(err, GCX_ERR_VALUE, "%s must be one of %s, got '%s'", name, choices, value);
    cfg->param_value[i] = idx;
    return GCX_OK;
}

double gcx_config_param(const gcx_gpu_config *cfg, const char *name)
{
    int i = param_index(name);
    return i < 0 ? NAN : cfg->param_value[i];
}

/* Lines of a cache given its capacity in KB, ways and line size; 0 with an error if they do not
 * divide evenly. */
static int64_t sets_of(const char *what, double size_kb, int64_t ways, int64_t line, int64_t slices, gcx_error *err)
{
    double bytes = size_kb * 1024.0;
    double sets = bytes / ((double)ways * (double)line * (double)slices);
    if (sets < 1.0) {
        /* The lines of one slice, which its ways must fit: the whole L2's (48 lines for 6 KB) read as
         * if they were "fewer than l2.ways = 16 per partition". */
        gcx_fail(err, GCX_ERR_VALUE,
                 "%s.size_kb = %s holds %s lines of %lld bytes%s, fewer than %s.ways = %lld", what, gcx_num(size_kb).s,
                 gcx_num(bytes / (double)line / (double)slices).s, (long long)line,
                 slices > 1 ? " in each partition" : "", what, (long long)ways);
        return 0;
    }
    if (sets != floor(sets)) {
        gcx_fail(err, GCX_ERR_VALUE,
                 "%s.size_kb = %s is not a whole number of sets of %lld ways x %lld bytes%s", what, gcx_num(size_kb).s,
                 (long long)ways, (long long)line, slices > 1 ? " in each partition" : "");
        return 0;
    }
    return (int64_t)sets;
}

int gcx_config_check(const gcx_gpu_config *c, gcx_error *err)
{
    if (!gcx_is_pow2((uint64_t)c->l1d_line_bytes))
        return gcx_fail(err, GCX_ERR_VALUE, "l1d.line_bytes must be a power of two, got %lld", (long long)c->l1d_line_bytes);
    if (!gcx_is_pow2((uint64_t)c->l2_line_bytes))
        return gcx_fail(err, GCX_ERR_VALUE, "l2.line_bytes must be a power of two, got %lld", (long long)c->l2_line_bytes);
    if (!gcx_is_pow2((uint64_t)c->l1i_line_bytes))
        return gcx_fail(err, GCX_ERR_VALUE, "l1i.line_bytes must be a power of two, got %lld", (long long)c->l1i_line_bytes);
    int64_t l1d_sets = sets_of("l1d", c->l1d_size_kb, c->l1d_ways, c->l1d_line_bytes, 1, err);
    if (!l1d_sets)
        return GCX_ERR_VALUE;
    if (c->l1d_index == GCX_INDEX_CHOICE_FERMI && l1d_sets != 32 && l1d_sets != 64)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "l1d.index = 'fermi' (GPGPU-Sim's Fermi hash) needs 32 or 64 L1D sets; l1d.size_kb = %s with "
                        "%lld ways of %lld bytes gives %lld (set l1d.index to 'mod' or 'xor' for this geometry)",
                        gcx_num(c->l1d_size_kb).s, (long long)c->l1d_ways, (long long)c->l1d_line_bytes, (long long)l1d_sets);
    if (c->l1i_size_kb > 0 && !sets_of("l1i", c->l1i_size_kb, c->l1i_ways, c->l1i_line_bytes, 1, err))
        return GCX_ERR_VALUE;
    if (!sets_of("l2", c->l2_size_kb, c->l2_ways, c->l2_line_bytes, c->l2_partitions, err))
        return GCX_ERR_VALUE;
    /* An L1D request names its sectors within its own line, which must therefore be the L2's. */
    if (c->l1d_line_bytes != c->l2_line_bytes)
        return gcx_fail(err, GCX_ERR_VALUE, "l1d.line_bytes (%lld) and l2.line_bytes (%lld) must be equal",
                        (long long)c->l1d_line_bytes, (long long)c->l2_line_bytes);
    /* An instruction-cache miss is one L2 request, which the L2 serves within one of its lines. */
    if (c->l1i_size_kb > 0 && c->l1i_line_bytes > c->l2_line_bytes)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "l1i.line_bytes (%lld) must not exceed l2.line_bytes (%lld): an instruction-cache miss "
                        "is one L2 request (set l1i.line_bytes to at most %lld, or l1i.size_kb = 0)",
                        (long long)c->l1i_line_bytes, (long long)c->l2_line_bytes, (long long)c->l2_line_bytes);
    const char *names[2] = {"l1d", "l2"};
    int64_t lines[2] = {c->l1d_line_bytes, c->l2_line_bytes}, sectors[2] = {c->l1d_sector_bytes, c->l2_sector_bytes};
    for (int i = 0; i < 2; i++) {
        if (sectors[i] == 0)
            continue;
        if (!gcx_is_pow2((uint64_t)sectors[i]) || sectors[i] < 32 || sectors[i] > lines[i] ||
            lines[i] / sectors[i] > GCX_MAX_SECTORS)
            return gcx_fail(err, GCX_ERR_VALUE,
                            "%s.sector_bytes must be 0 or a power of two from 32 to %s.line_bytes (%lld) with at "
                            "most %d sectors, got %lld",
                            names[i], names[i], (long long)lines[i], GCX_MAX_SECTORS, (long long)sectors[i]);
    }
    if (c->l1d_sector_bytes && c->l2_sector_bytes && c->l2_sector_bytes > c->l1d_sector_bytes)
        return gcx_fail(err, GCX_ERR_VALUE, "l2.sector_bytes (%lld) must not exceed l1d.sector_bytes (%lld)",
                        (long long)c->l2_sector_bytes, (long long)c->l1d_sector_bytes);
    if (!gcx_is_pow2((uint64_t)c->l2_interleave_bytes) || c->l2_interleave_bytes < c->l2_line_bytes)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "l2.interleave_bytes must be a power of two no smaller than l2.line_bytes (%lld), got %lld",
                        (long long)c->l2_line_bytes, (long long)c->l2_interleave_bytes);
    if (c->l2_partitions % c->dram_channels != 0)
        return gcx_fail(err, GCX_ERR_VALUE,
                        "l2.partitions (%lld) must be a multiple of dram.channels (%lld): each channel serves "
                        "the same number of partitions",
                        (long long)c->l2_partitions, (long long)c->dram_channels);
    if (c->sms % c->l1d_cluster_size != 0)
        return gcx_fail(err, GCX_ERR_VALUE, "core.sms (%lld) must be a multiple of l1d.cluster_size (%lld)",
                        (long long)c->sms, (long long)c->l1d_cluster_size);
    if (c->dram_row_bytes % c->l2_line_bytes != 0)
        return gcx_fail(err, GCX_ERR_VALUE, "dram.row_bytes (%lld) must be a multiple of l2.line_bytes (%lld)",
                        (long long)c->dram_row_bytes, (long long)c->l2_line_bytes);
    if (c->max_warps_per_sm < 1 || c->max_threads_per_sm < 32)
        return gcx_fail(err, GCX_ERR_VALUE, "an SM must hold at least one warp");
    /* The chosen techniques check their parameters against each other. */
    int64_t chosen[GCX_N_TECH_KINDS] = {c->l1d_admission, c->l1d_power, c->l2_power, c->l1d_sharing};
    for (int kind = 0; kind < GCX_N_TECH_KINDS; kind++) {
        const gcx_technique *t = gcx_techniques[chosen[kind]];
        if (!t->check)
            continue;
        double params[GCX_TECH_MAX_PARAMS];
        for (int p = 0; p < t->n_params && p < GCX_TECH_MAX_PARAMS; p++)
            params[p] = gcx_config_param(c, t->params[p].name);
        int rc = t->check(params, err);
        if (rc)
            return rc;
    }
    return GCX_OK;
}

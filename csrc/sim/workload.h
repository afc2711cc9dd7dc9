/* A workload as the C core sees it: read-only views of a Trace's numpy columns (no copies) and
 * the per-CTA warp tables the model derives from them. Mirrors gpucachex/trace.py. */
#ifndef GCX_SIM_WORKLOAD_H
#define GCX_SIM_WORKLOAD_H

#include <stdint.h>

#include "gcx.h"

/* OpClass and Space codes, as in gpucachex/trace.py. */
enum gcx_op_class {
    GCX_OP_ALU = 0, GCX_OP_SFU, GCX_OP_FP64, GCX_OP_TENSOR, GCX_OP_BRANCH, GCX_OP_BARRIER, GCX_OP_EXIT,
    GCX_OP_LOAD, GCX_OP_STORE, GCX_OP_ATOMIC, GCX_OP_MEMBAR, GCX_OP_NOP, GCX_N_OP_CLASSES
};
enum gcx_space { GCX_SPACE_NONE = 0, GCX_SPACE_GLOBAL, GCX_SPACE_LOCAL, GCX_SPACE_SHARED, GCX_SPACE_CONST, GCX_SPACE_TEX, GCX_N_SPACES };
/* Requests only (never in a trace): an instruction fetch from the L1 instruction cache. */
#define GCX_SPACE_INST 7
enum gcx_inst_flag { GCX_IF_BYPASS_L1 = 1 };

#define GCX_MAX_DST 2
#define GCX_MAX_SRC 5
#define GCX_NO_REG 255

typedef struct gcx_kernel {
    const char *name;
    uint32_t grid[3], block[3];
    uint32_t nregs, shmem_bytes;
    uint64_t n_insts, n_addrs;
    const uint32_t *cta;
    const uint16_t *warp;
    const uint32_t *pc;
    const uint8_t *op_class, *space, *flags, *width;
    const uint32_t *mask;
    const uint8_t *dst; /* [n_insts][GCX_MAX_DST] */
    const uint8_t *src; /* [n_insts][GCX_MAX_SRC] */
    const uint64_t *addr_offset;
    const uint64_t *addresses;
    /* Derived by gcx_workload_prepare. */
    uint32_t threads_per_cta, warps_per_cta;
    uint32_t n_ctas;      /* CTAs with instructions, dispatched in increasing id */
    uint32_t *cta_ids;    /* [n_ctas] */
    uint64_t *warp_first; /* [n_ctas * warps_per_cta]: first instruction of each warp */
    uint64_t *warp_end;   /* [n_ctas * warps_per_cta]: one past its last (== first: no instructions) */
} gcx_kernel;

typedef struct gcx_memcpy {
    uint32_t before_kernel;
    uint64_t dst, bytes;
} gcx_memcpy;

typedef struct gcx_workload {
    gcx_kernel *kernels;
    uint32_t n_kernels;
    const gcx_memcpy *memcpys;
    uint32_t n_memcpys;
} gcx_workload;

/* Check the columns (order, ranges, address offsets) and build the warp tables. */
int gcx_workload_prepare(gcx_workload *wl, gcx_error *err);
void gcx_workload_release(gcx_workload *wl);

#endif

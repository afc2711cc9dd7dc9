/* Streaming parser of Accel-Sim/NVBit kernel traces (.traceg text): fed arbitrary chunks, it builds
 * the structure-of-arrays columns of gpucachex.trace.Kernel and reports errors as "file:line: ...".
 *
 * Lifecycle: gcx_opcodes_init (one table for a whole trace, shared by its kernels), then per kernel
 * file gcx_traceg_init, gcx_traceg_feed as many times as there are chunks (lines may be split
 * anywhere), gcx_traceg_finish, gcx_traceg_take_columns, gcx_traceg_free. An error is sticky: once
 * feed or finish failed, every later call returns the same error.
 *
 * Format (facts from the Accel-Sim tracer and its parser): a header of "-key = value" lines ended by
 * the first '#' line; then per thread block "#BEGIN_TB", "thread block = x,y,z", optional "cluster
 * ..." lines, per warp "warp = W", "insts = N" and N instruction lines, then "#END_TB". An
 * instruction line is
 *   [tb_x tb_y tb_z warp (tracer version < 3)] [line number (lineinfo)] PC mask n_dst dst... opcode
 *   n_src src... width [address mode, addresses (width > 0)] [immediate (tracer version >= 5)]
 * Address mode 0 lists one hex address per active lane; 1 is a hex base and a decimal stride (the
 * k-th active lane accesses base + k * stride); 2 is a hex base and popcount-1 decimal deltas, each
 * relative to the previous active lane. A memory line whose mask is 0 accesses nothing. */
#ifndef GCX_TRACEG_H
#define GCX_TRACEG_H

#include <stddef.h>
#include <stdint.h>

#include "gcx.h"

enum {
    GCX_TRACEG_MAX_DST = 2,        /* destination registers kept per instruction */
    GCX_TRACEG_MAX_SRC = 5,        /* source registers kept per instruction */
    GCX_TRACEG_NO_REG = 255,       /* "no register" (and RZ, R255) */
    GCX_TRACEG_MAX_LINE = 65536,   /* longer lines are errors: real lines are under 1 KB */
    GCX_OPCODES_MAX = 65535,       /* distinct opcode names in one trace (uint16 column) */
    GCX_OPCODE_MAX_LEN = 128,      /* characters in one opcode name */
    GCX_TRACEG_MAX_WARPS = 64,     /* warps per CTA: at most 2048 threads */
};

/* Options of gcx_traceg_init. */
enum {
    /* Accept a file holding fewer thread blocks than its grid (the tracer skips CTAs that executed
     * no traced instruction). Without it a missing CTA is reported as a truncated file. */
    GCX_TRACEG_ALLOW_MISSING_CTAS = 1,
};

/* The opcode name table: names interned in order of first appearance; index = Kernel.opcode. */
typedef struct gcx_opcodes {
    char **names;
    uint32_t *lens;
    uint64_t *hashes;
    uint32_t count, cap;
    uint32_t *slots; /* open addressing: 0 = empty, else index + 1 */
    uint32_t n_slots;
} gcx_opcodes;

int gcx_opcodes_init(gcx_opcodes *t, gcx_error *err);
/* Index of `name` (len bytes), adding it if new. */
int gcx_opcodes_intern(gcx_opcodes *t, const char *name, size_t len, uint16_t *index, gcx_error *err);
void gcx_opcodes_free(gcx_opcodes *t);

/* Which header fields the file had (bits of gcx_traceg_header.present). */
enum {
    GCX_HDR_KERNEL_NAME = 1 << 0,
    GCX_HDR_KERNEL_ID = 1 << 1,
    GCX_HDR_GRID = 1 << 2,
    GCX_HDR_BLOCK = 1 << 3,
    GCX_HDR_SHMEM = 1 << 4,
    GCX_HDR_NREGS = 1 << 5,
    GCX_HDR_BINARY_VERSION = 1 << 6,
    GCX_HDR_STREAM_ID = 1 << 7,
    GCX_HDR_SHMEM_BASE = 1 << 8,
    GCX_HDR_LOCAL_BASE = 1 << 9,
    GCX_HDR_NVBIT_VERSION = 1 << 10,
    GCX_HDR_TRACER_VERSION = 1 << 11,
    GCX_HDR_LINEINFO = 1 << 12,
};

typedef struct gcx_traceg_header {
    uint32_t present;
    char *kernel_name;   /* NUL-terminated, owned by the parser; NULL if absent */
    char *nvbit_version; /* idem */
    int64_t kernel_id;
    uint32_t grid[3], block[3];
    uint64_t shmem, nregs, binary_version, cuda_stream_id, shmem_base, local_base;
    int tracer_version; /* 0 when the file has no version line (legacy) */
    int lineinfo;
} gcx_traceg_header;

/* The columns of one kernel, rows sorted by (cta, warp) in program order within a warp. Each
 * pointer is a malloc'd block of exactly n_insts rows (dst: n_insts x MAX_DST, src: n_insts x
 * MAX_SRC) or n_addresses addresses; NULL when empty. */
typedef struct gcx_traceg_columns {
    size_t n_insts, n_addresses;
    uint32_t *cta;
    uint16_t *warp;
    uint32_t *pc;
    uint16_t *opcode;
    uint32_t *mask;
    uint8_t *width;
    uint8_t *dst;
    uint8_t *src;
    uint64_t *addr_offset;
    uint64_t *addresses;
} gcx_traceg_columns;

typedef struct gcx_traceg_block gcx_traceg_block;
typedef struct gcx_traceg_tb gcx_traceg_tb;

typedef struct gcx_traceg {
    /* configuration */
    char *file;
    gcx_opcodes *opcodes;
    unsigned options;
    /* what was read */
    gcx_traceg_header header;
    gcx_traceg_columns cols;
    size_t inst_cap, addr_cap;
    uint64_t thread_blocks;
    /* state machine */
    int state;
    uint64_t line;
    int legacy; /* tracer version < 3: every instruction line starts with tb_x tb_y tb_z warp */
    uint64_t grid_ctas;
    uint32_t warps_per_cta;
    uint32_t tb[3];
    uint32_t cta;
    uint64_t tb_line;
    uint64_t warps_seen; /* bit w: warp w of the current thread block was listed */
    uint32_t warp;
    uint64_t warp_line, insts_line, warp_declared, warp_left;
    /* per-warp and per-thread-block records, to sort and to find duplicates */
    gcx_traceg_block *blocks;
    size_t n_blocks, blocks_cap;
    int blocks_sorted;
    gcx_traceg_tb *tbs;
    size_t n_tbs, tbs_cap;
    int tbs_sorted;
    /* the unfinished last line of the previous chunk */
    char *carry;
    size_t carry_len, carry_cap;
    /* sticky failure */
    gcx_error failure;
} gcx_traceg;

/* `file` names the input in error messages. */
int gcx_traceg_init(gcx_traceg *p, const char *file, gcx_opcodes *opcodes, unsigned options, gcx_error *err);
int gcx_traceg_feed(gcx_traceg *p, const char *buf, size_t len, gcx_error *err);
/* End of input: checks that the file is complete, sorts rows by (cta, warp) if the file listed
 * them out of order, and trims the columns to their exact size. */
int gcx_traceg_finish(gcx_traceg *p, gcx_error *err);
/* Hand the columns over after a successful finish: the caller frees each pointer with free(), or
 * all of them with gcx_traceg_columns_free. */
void gcx_traceg_take_columns(gcx_traceg *p, gcx_traceg_columns *out);
void gcx_traceg_columns_free(gcx_traceg_columns *k);
void gcx_traceg_free(gcx_traceg *p);

#endif

/* One pass over a kernel's columns checking the row-level rules of gpucachex.trace.Kernel.validate
 * (ranges, (CTA, warp) order, address offsets): used on native trace files, which are mapped from
 * disk rather than parsed, so that loading them stays fast and still safe. */
#ifndef GCX_TRACE_CHECK_H
#define GCX_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "gcx.h"

typedef struct gcx_kernel_view {
    size_t n_insts, n_addresses;
    const uint32_t *cta;
    const uint16_t *warp;
    const uint16_t *opcode;
    const uint8_t *op_class;
    const uint8_t *space;
    const uint32_t *mask;
    const uint8_t *width;
    const uint64_t *addr_offset;
    uint64_t grid_ctas;      /* cta < grid_ctas */
    uint64_t warps_per_cta;  /* warp < warps_per_cta */
    uint64_t n_opcodes;      /* opcode < n_opcodes */
    uint32_t n_op_classes;   /* op_class < n_op_classes */
    uint32_t n_spaces;       /* space < n_spaces */
} gcx_kernel_view;

/* GCX_OK, or GCX_ERR_TRACE with the first broken rule in the words Kernel.validate uses. */
int gcx_kernel_check(const gcx_kernel_view *k, gcx_error *err);

/* Why one row's class, space and width do not go together (NULL if they do): widths the coalescer
 * knows (0, 1, 2, 4, 8, 16 bytes), a memory space on every load, store and atomic, no writes to
 * read-only memory. Kernel.validate checks the same. */
const char *gcx_memory_fields_problem(uint8_t op_class, uint8_t space, uint8_t width);

#endif

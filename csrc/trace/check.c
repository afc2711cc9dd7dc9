/* Row-level checks of a kernel's columns in one pass (see check.h): the rules of Kernel.validate
 * that touch every row, with the same wording, so native files are checked at memory speed. */
#include "trace/check.h"

#include <inttypes.h>

#include "sim/workload.h"

const char *gcx_memory_fields_problem(uint8_t op_class, uint8_t space, uint8_t width)
{
    int memory = op_class == GCX_OP_LOAD || op_class == GCX_OP_STORE || op_class == GCX_OP_ATOMIC;
    int writes = op_class == GCX_OP_STORE || op_class == GCX_OP_ATOMIC;
    if (width != 0 && width != 1 && width != 2 && width != 4 && width != 8 && width != 16)
        return "an access width a lane cannot have (1, 2, 4, 8 or 16 bytes; 0: no access)";
    if (memory && space == GCX_SPACE_NONE)
        return "a load, store or atomic without a memory space";
    if (writes && (space == GCX_SPACE_CONST || space == GCX_SPACE_TEX))
        return "a store or atomic to read-only (const or texture) memory";
    return NULL;
}

int gcx_kernel_check(const gcx_kernel_view *k, gcx_error *err)
{
    uint64_t prev_key = 0, offset = 0;
    for (size_t i = 0; i < k->n_insts; i++) {
        if (k->cta[i] >= k->grid_ctas)
            return gcx_fail(err, GCX_ERR_TRACE, "CTA id %" PRIu32 " is outside the grid of %" PRIu64 " CTAs",
                            k->cta[i], k->grid_ctas);
        if (k->warp[i] >= k->warps_per_cta)
            return gcx_fail(err, GCX_ERR_TRACE, "warp id %u is outside a CTA of %" PRIu64 " warps",
                            (unsigned)k->warp[i], k->warps_per_cta);
        uint64_t key = (uint64_t)k->cta[i] << 16 | k->warp[i];
        if (i > 0 && key < prev_key)
            return gcx_fail(err, GCX_ERR_TRACE, "instruction %zu breaks the (CTA, warp) order of rows", i);
        prev_key = key;
        if (k->op_class[i] >= k->n_op_classes)
            return gcx_fail(err, GCX_ERR_TRACE, "unknown op_class %u", (unsigned)k->op_class[i]);
        if (k->space[i] >= k->n_spaces)
            return gcx_fail(err, GCX_ERR_TRACE, "unknown space %u", (unsigned)k->space[i]);
        const char *problem = gcx_memory_fields_problem(k->op_class[i], k->space[i], k->width[i]);
        if (problem)
            return gcx_fail(err, GCX_ERR_TRACE, "instruction %zu is %s (class %u, space %u, width %u)", i, problem,
                            (unsigned)k->op_class[i], (unsigned)k->space[i], (unsigned)k->width[i]);
        if (k->opcode[i] >= k->n_opcodes)
            return gcx_fail(err, GCX_ERR_TRACE, "opcode index %u outside the table of %" PRIu64 " opcodes",
                            (unsigned)k->opcode[i], k->n_opcodes);
        if (k->addr_offset[i] != offset)
            return gcx_fail(err, GCX_ERR_TRACE,
                            "addr_offset of instruction %zu is %" PRIu64 ", expected %" PRIu64
                            " (active lanes of earlier memory instructions)",
                            i, k->addr_offset[i], offset);
        if (k->width[i])
            offset += (uint64_t)gcx_popcount64(k->mask[i]);
    }
    if (offset != k->n_addresses)
        return gcx_fail(err, GCX_ERR_TRACE, "%zu addresses for %" PRIu64 " active memory lanes", k->n_addresses,
                        offset);
    return GCX_OK;
}

/* Checks a workload's columns before simulation (Python validates too, but the core never trusts
 * its input) and derives the per-CTA warp tables the CTA dispatcher uses. */
#include "sim/workload.h"
#include "trace/check.h"

#include <stdlib.h>
#include <string.h>

static int prepare_kernel(gcx_kernel *k, uint32_t index, gcx_error *err)
{
    const char *name = k->name ? k->name : "?";
    uint64_t grid = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];
    uint64_t threads = (uint64_t)k->block[0] * k->block[1] * k->block[2];
    if (grid == 0 || threads == 0 || threads > 2048 || grid > 0xFFFFFFFFull)
        return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): bad launch shape grid (%u,%u,%u) block (%u,%u,%u)",
                        index + 1, name, k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2]);
    k->threads_per_cta = (uint32_t)threads;
    k->warps_per_cta = (uint32_t)((threads + 31) / 32);

    /* Count CTAs and check the (cta, warp) order of rows. */
    uint32_t n_ctas = 0;
    for (uint64_t i = 0; i < k->n_insts; i++) {
        if (k->cta[i] >= grid)
            return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): instruction %llu has CTA %u outside the grid of %llu",
                            index + 1, name, (unsigned long long)i, k->cta[i], (unsigned long long)grid);
        if (k->warp[i] >= k->warps_per_cta)
            return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): instruction %llu has warp %u in a CTA of %u warps",
                            index + 1, name, (unsigned long long)i, k->warp[i], k->warps_per_cta);
        if (i > 0 && (k->cta[i] < k->cta[i - 1] || (k->cta[i] == k->cta[i - 1] && k->warp[i] < k->warp[i - 1])))
            return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): instruction %llu breaks the (CTA, warp) order",
                            index + 1, name, (unsigned long long)i);
        if (i == 0 || k->cta[i] != k->cta[i - 1])
            n_ctas++;
        if (k->op_class[i] >= GCX_N_OP_CLASSES || k->space[i] >= GCX_N_SPACES)
            return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): instruction %llu has unknown class %u or space %u",
                            index + 1, name, (unsigned long long)i, k->op_class[i], k->space[i]);
        const char *problem = gcx_memory_fields_problem(k->op_class[i], k->space[i], k->width[i]);
        if (problem)
            return gcx_fail(err, GCX_ERR_TRACE, "kernel %u (%s): instruction %llu is %s (class %u, space %u, width %u)",
                            index + 1, name, (unsigned long long)i, problem, k->op_class[i], k->space[i], k->width[i]);
        if (k->width[i] && k->mask[i]) {
            uint64_t lanes = (uint64_t)gcx_popcount64(k->mask[i]);
            if (k->addr_offset[i] > k->n_addrs || k->n_addrs - k->addr_offset[i] < lanes)
                return gcx_fail(err, GCX_ERR_TRACE,
                                "kernel %u (%s): instruction %llu reads addresses %llu..%llu of %llu", index + 1, name,
                                (unsigned long long)i, (unsigned long long)k->addr_offset[i],
                                (unsigned long long)(k->addr_offset[i] + lanes), (unsigned long long)k->n_addrs);
        }
    }
    k->n_ctas = n_ctas;
    size_t slots = (size_t)n_ctas * k->warps_per_cta;
    k->cta_ids = malloc((n_ctas ? n_ctas : 1) * sizeof *k->cta_ids);
    k->warp_first = malloc((slots ? slots : 1) * sizeof *k->warp_first);
    k->warp_end = malloc((slots ? slots : 1) * sizeof *k->warp_end);
    if (!k->cta_ids || !k->warp_first || !k->warp_end)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory indexing kernel %u", index + 1);
    for (size_t s = 0; s < slots; s++)
        k->warp_first[s] = k->warp_end[s] = 0;
    int64_t c = -1;
    for (uint64_t i = 0; i < k->n_insts; i++) {
        if (i == 0 || k->cta[i] != k->cta[i - 1]) {
            c++;
            k->cta_ids[c] = k->cta[i];
        }
        size_t slot = (size_t)c * k->warps_per_cta + k->warp[i];
        if (i == 0 || k->cta[i] != k->cta[i - 1] || k->warp[i] != k->warp[i - 1])
            k->warp_first[slot] = i;
        k->warp_end[slot] = i + 1;
    }
    return GCX_OK;
}

int gcx_workload_prepare(gcx_workload *wl, gcx_error *err)
{
    for (uint32_t i = 0; i < wl->n_kernels; i++) {
        int rc = prepare_kernel(&wl->kernels[i], i, err);
        if (rc)
            return rc;
    }
    for (uint32_t i = 0; i < wl->n_memcpys; i++)
        if (wl->memcpys[i].before_kernel > wl->n_kernels)
            return gcx_fail(err, GCX_ERR_TRACE, "memcpy %u comes before kernel %u of %u", i,
                            wl->memcpys[i].before_kernel + 1, wl->n_kernels);
    return GCX_OK;
}

void gcx_workload_release(gcx_workload *wl)
{
    for (uint32_t i = 0; i < wl->n_kernels; i++) {
        free(wl->kernels[i].cta_ids);
        free(wl->kernels[i].warp_first);
        free(wl->kernels[i].warp_end);
        wl->kernels[i].cta_ids = NULL;
        wl->kernels[i].warp_first = wl->kernels[i].warp_end = NULL;
    }
}

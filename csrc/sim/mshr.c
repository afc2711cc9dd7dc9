/* Miss status holding registers: one entry per line being fetched, holding the requests that
 * wait for it (merged misses), and the sorted-insert helper of request queues. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

int gcx_mshr_init(gcx_mshr *m, uint32_t cap, uint32_t merge_cap)
{
    memset(m, 0, sizeof *m);
    m->e = calloc(cap, sizeof *m->e);
    m->free_list = malloc(cap * sizeof *m->free_list);
    if (!m->e || !m->free_list) {
        gcx_mshr_free(m);
        return GCX_ERR_NOMEM;
    }
    m->cap = cap;
    m->merge_cap = merge_cap;
    for (uint32_t i = 0; i < cap; i++)
        m->free_list[i] = cap - 1 - i;
    m->n_free = cap;
    return GCX_OK;
}

void gcx_mshr_free(gcx_mshr *m)
{
    free(m->e);
    free(m->free_list);
    memset(m, 0, sizeof *m);
}

uint32_t gcx_mshr_alloc(gcx_mshr *m, uint64_t addr, uint32_t line)
{
    if (m->n_free == 0)
        return GCX_NONE;
    uint32_t i = m->free_list[--m->n_free];
    gcx_mshr_entry *e = &m->e[i];
    memset(e, 0, sizeof *e);
    e->addr = addr;
    e->line = line;
    e->used = 1;
    m->used++;
    return i;
}

void gcx_mshr_add(gcx_mshr *m, uint32_t i, gcx_req *r)
{
    gcx_mshr_entry *e = &m->e[i];
    r->next = NULL;
    if (e->waiting_tail)
        e->waiting_tail->next = r;
    else
        e->waiting = r;
    e->waiting_tail = r;
    e->n_waiting++;
}

void gcx_mshr_release(gcx_mshr *m, uint32_t i)
{
    m->e[i].used = 0;
    m->e[i].waiting = m->e[i].waiting_tail = NULL;
    m->free_list[m->n_free++] = i;
    m->used--;
}

void gcx_q_insert_sorted(gcx_queue *q, gcx_req *r, uint64_t t_ready)
{
    r->t_ready = t_ready;
    if (!q->tail || q->tail->t_ready <= t_ready) {
        gcx_q_push(q, r, t_ready);
        return;
    }
    gcx_req **p = &q->head;
    while (*p && (*p)->t_ready <= t_ready)
        p = &(*p)->next;
    r->next = *p;
    *p = r;
    q->n++;
}

/* Miss status holding registers: one entry per line being fetched, holding the requests that
 * wait for it (merged misses), and the sorted-insert helper of request queues. */
#include <stdlib.h>
#include <string.h>

#include "sim/gpu.h"

static inline uint32_t hash_addr(uint64_t a)
{
    a ^= a >> 29;
    a *= 0xBF58476D1CE4E5B9ull;
    a ^= a >> 32;
    return (uint32_t)a;
}

int gcx_mshr_init(gcx_mshr *m, uint32_t cap, uint32_t merge_cap)
{
    memset(m, 0, sizeof *m);
    uint32_t hcap = 4;
    while (hcap < 2 * cap)
        hcap <<= 1;
    m->e = calloc(cap, sizeof *m->e);
    m->free_list = malloc(cap * sizeof *m->free_list);
    m->hash = malloc(hcap * sizeof *m->hash);
    m->hash_mask = hcap - 1;
    if (m->hash)
        for (uint32_t i = 0; i < hcap; i++)
            m->hash[i] = GCX_NONE;
    if (!m->e || !m->free_list || !m->hash) {
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
    free(m->hash);
    memset(m, 0, sizeof *m);
}

uint32_t gcx_mshr_find(const gcx_mshr *m, uint64_t addr)
{
    for (uint32_t h = hash_addr(addr) & m->hash_mask;; h = (h + 1) & m->hash_mask) {
        uint32_t i = m->hash[h];
        if (i == GCX_NONE)
            return GCX_NONE;
        if (m->e[i].addr == addr)
            return i;
    }
}

static void hash_insert(gcx_mshr *m, uint32_t i)
{
    uint32_t h = hash_addr(m->e[i].addr) & m->hash_mask;
    while (m->hash[h] != GCX_NONE)
        h = (h + 1) & m->hash_mask;
    m->hash[h] = i;
}

/* Remove entry i, shifting later members of its probe run back (no tombstones). */
static void hash_remove(gcx_mshr *m, uint32_t i)
{
    uint32_t h = hash_addr(m->e[i].addr) & m->hash_mask, probes = 0;
    while (m->hash[h] != i) {
        if (++probes > m->hash_mask)
            return; /* not indexed: callers check entries before releasing them */
        h = (h + 1) & m->hash_mask;
    }
    m->hash[h] = GCX_NONE;
    for (uint32_t j = (h + 1) & m->hash_mask; m->hash[j] != GCX_NONE; j = (j + 1) & m->hash_mask) {
        uint32_t k = m->hash[j];
        m->hash[j] = GCX_NONE;
        hash_insert(m, k);
    }
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
    hash_insert(m, i);
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
    hash_remove(m, i);
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

/* The .traceg text parser: a line-at-a-time state machine over chunks of input, with hand-written
 * number scanning (no locale, no NUL-terminated strings) so that it stays fast on gigabyte traces. */
#include "trace/traceg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gcx_traceg_block { /* the instructions of one warp as the file listed them */
    uint64_t key;         /* cta << 16 | warp */
    size_t first, count;
    size_t addr_first, addr_count;
    uint64_t line; /* of its "warp =" line */
};

struct gcx_traceg_tb {
    uint32_t cta;
    uint64_t line; /* of its "thread block =" line */
};

enum {
    ST_HEADER,     /* before the first '#' line */
    ST_BETWEEN_TB, /* expecting #BEGIN_TB */
    ST_TB_START,   /* after #BEGIN_TB, expecting "thread block =" */
    ST_IN_TB,      /* expecting "warp =" or #END_TB */
    ST_WARP_INSTS, /* after "warp =", expecting "insts =" */
    ST_IN_WARP,    /* reading the warp's instruction lines */
    ST_FINISHED,
};

/* ---- character classes and number scanning ----------------------------------------------- */

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Next whitespace-separated token of [*c, e): sets [*ts, *te) and advances *c; 0 at end of line. */
static inline int next_token(const char **c, const char *e, const char **ts, const char **te)
{
    const char *s = *c;
    while (s < e && is_space(*s))
        s++;
    if (s == e) {
        *ts = *te = *c = e;
        return 0;
    }
    const char *t = s;
    while (t < e && !is_space(*t))
        t++;
    *ts = s;
    *te = t;
    *c = t;
    return 1;
}

/* Unsigned decimal token; 0 if it is not one or overflows 64 bits. */
static int tok_udec(const char *s, const char *e, uint64_t *out)
{
    if (s == e)
        return 0;
    uint64_t v = 0;
    for (; s < e; s++) {
        if (!is_digit(*s))
            return 0;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Signed decimal token in the int64 range, returned as its two's-complement bits. */
static int tok_sdec(const char *s, const char *e, uint64_t *out)
{
    int neg = 0;
    if (s < e && (*s == '-' || *s == '+')) {
        neg = *s == '-';
        s++;
    }
    uint64_t mag;
    if (!tok_udec(s, e, &mag))
        return 0;
    if (neg ? mag > (uint64_t)1 << 63 : mag > (((uint64_t)1 << 63) - 1))
        return 0;
    *out = neg ? (uint64_t)0 - mag : mag;
    return 1;
}

/* Hexadecimal token with an optional 0x prefix, at most 16 digits. */
static int tok_hex(const char *s, const char *e, uint64_t *out)
{
    if (e - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        s += 2;
    if (s == e || e - s > 16)
        return 0;
    uint64_t v = 0;
    for (; s < e; s++) {
        int h = hex_value(*s);
        if (h < 0)
            return 0;
        v = (v << 4) | (uint64_t)h;
    }
    *out = v;
    return 1;
}

/* The immediate of a version 5 line: signed or unsigned decimal, or 0x-prefixed hex. */
static int tok_immediate(const char *s, const char *e, uint64_t *out)
{
    if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return tok_hex(s, e, out);
    return tok_sdec(s, e, out) || tok_udec(s, e, out);
}

/* A register operand: R<n> (n <= 255; R255 is RZ) gives n, the other register files (uniform
 * UR<n>, predicates P<n>/UP<n>, RZ/URZ/PT/UPT) give NO_REG; -1 if the token is not a register,
 * -2 if it is an R register beyond R255. */
static int tok_register(const char *s, const char *e)
{
    size_t n = (size_t)(e - s);
    if ((n == 2 && memcmp(s, "RZ", 2) == 0) || (n == 2 && memcmp(s, "PT", 2) == 0) ||
        (n == 3 && memcmp(s, "URZ", 3) == 0) || (n == 3 && memcmp(s, "UPT", 3) == 0))
        return GCX_TRACEG_NO_REG;
    int general = s < e && *s == 'R';
    const char *d = s;
    if (n >= 2 && (s[0] == 'R' || s[0] == 'P'))
        d = s + 1;
    else if (n >= 3 && s[0] == 'U' && (s[1] == 'R' || s[1] == 'P'))
        d = s + 2;
    else
        return -1;
    uint64_t v;
    if (!tok_udec(d, e, &v))
        return -1;
    if (!general)
        return GCX_TRACEG_NO_REG;
    return v <= 255 ? (int)v : -2;
}

/* An opcode starts with a letter and is printable ASCII: strict enough to catch misplaced numbers,
 * loose enough for any modifier spelling a future SASS may use. */
static int is_opcode_token(const char *s, const char *e)
{
    if (s == e || !is_alpha(*s) || e - s > GCX_OPCODE_MAX_LEN)
        return 0;
    for (; s < e; s++)
        if (*s < 0x21 || *s > 0x7e)
            return 0;
    return 1;
}

/* Quote [s, e) for a message: printable ASCII kept, other bytes as \xNN, long text cut. */
static const char *quote(char *out, size_t cap, const char *s, const char *e)
{
    size_t o = 0;
    if (s == e) {
        snprintf(out, cap, "the end of the line");
        return out;
    }
    out[o++] = '\'';
    for (; s < e && o + 8 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch < 0x7f) {
            out[o++] = (char)ch;
        } else {
            snprintf(out + o, cap - o, "\\x%02x", ch);
            o += 4;
        }
    }
    if (s < e) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = '\0';
    return out;
}

/* ---- errors ------------------------------------------------------------------------------ */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int fail(gcx_traceg *p, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gcx_fail(&p->failure, GCX_ERR_TRACE, "%s:%" PRIu64 ": %s", p->file, p->line, msg);
}

static int fail_nomem(gcx_traceg *p, const char *what)
{
    return gcx_fail(&p->failure, GCX_ERR_NOMEM, "%s:%" PRIu64 ": out of memory growing %s", p->file, p->line,
                    what);
}

/* "expected <what>, found <token>" */
static int expected(gcx_traceg *p, const char *what, const char *ts, const char *te)
{
    char q[80];
    return fail(p, "expected %s, found %s", what, quote(q, sizeof q, ts, te));
}

/* ---- growable storage -------------------------------------------------------------------- */

/* Grow *ptr to hold at least `need` elements of `size` bytes, by half again each time: realloc of
 * large blocks remaps pages instead of copying them, so the peak stays near the final size. */
static int grow(void **ptr, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 1;
    size_t c = *cap < 1024 ? 1024 : *cap + *cap / 2;
    if (c < need)
        c = need;
    if (c > SIZE_MAX / size)
        return 0;
    void *q = realloc(*ptr, c * size);
    if (!q)
        return 0;
    *ptr = q;
    *cap = c;
    return 1;
}

static int grow_insts(gcx_traceg *p, size_t need)
{
    if (need <= p->inst_cap)
        return 1;
    size_t c = p->inst_cap < 1024 ? 1024 : p->inst_cap + p->inst_cap / 2;
    if (c < need)
        c = need;
    gcx_traceg_columns *k = &p->cols;
    struct {
        void **ptr;
        size_t size;
    } cols[] = {
        {(void **)&k->cta, sizeof *k->cta},
        {(void **)&k->warp, sizeof *k->warp},
        {(void **)&k->pc, sizeof *k->pc},
        {(void **)&k->opcode, sizeof *k->opcode},
        {(void **)&k->mask, sizeof *k->mask},
        {(void **)&k->width, sizeof *k->width},
        {(void **)&k->dst, GCX_TRACEG_MAX_DST},
        {(void **)&k->src, GCX_TRACEG_MAX_SRC},
        {(void **)&k->addr_offset, sizeof *k->addr_offset},
    };
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        size_t old = p->inst_cap;
        if (!grow(cols[i].ptr, &old, c, cols[i].size))
            return 0;
    }
    p->inst_cap = c;
    return 1;
}

/* ---- opcode table ------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

int gcx_opcodes_init(gcx_opcodes *t, gcx_error *err)
{
    memset(t, 0, sizeof *t);
    t->n_slots = 256;
    t->slots = calloc(t->n_slots, sizeof *t->slots);
    if (!t->slots)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the opcode table");
    return GCX_OK;
}

void gcx_opcodes_free(gcx_opcodes *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        free(t->names[i]);
    free(t->names);
    free(t->lens);
    free(t->hashes);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static void opcodes_place(gcx_opcodes *t, uint32_t index)
{
    uint32_t mask = t->n_slots - 1, s = (uint32_t)t->hashes[index] & mask;
    while (t->slots[s])
        s = (s + 1) & mask;
    t->slots[s] = index + 1;
}

int gcx_opcodes_intern(gcx_opcodes *t, const char *name, size_t len, uint16_t *index, gcx_error *err)
{
    uint64_t h = fnv1a(name, len);
    uint32_t mask = t->n_slots - 1;
    for (uint32_t s = (uint32_t)h & mask; t->slots[s]; s = (s + 1) & mask) {
        uint32_t i = t->slots[s] - 1;
        if (t->hashes[i] == h && t->lens[i] == len && memcmp(t->names[i], name, len) == 0) {
            *index = (uint16_t)i;
            return GCX_OK;
        }
    }
    if (t->count >= GCX_OPCODES_MAX)
        return gcx_fail(err, GCX_ERR_TRACE, "more than %d distinct opcodes", GCX_OPCODES_MAX);
    if (t->count == t->cap) {
        uint32_t c = t->cap ? t->cap * 2 : 64;
        char **names = realloc(t->names, c * sizeof *names);
        if (names)
            t->names = names;
        uint32_t *lens = realloc(t->lens, c * sizeof *lens);
        if (lens)
            t->lens = lens;
        uint64_t *hashes = realloc(t->hashes, c * sizeof *hashes);
        if (hashes)
            t->hashes = hashes;
        if (!names || !lens || !hashes)
            return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the opcode table");
        t->cap = c;
    }
    if (2 * (t->count + 1) > t->n_slots) {
        uint32_t *slots = calloc((size_t)t->n_slots * 2, sizeof *slots);
        if (!slots)
            return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the opcode table");
        free(t->slots);
        t->slots = slots;
        t->n_slots *= 2;
        for (uint32_t i = 0; i < t->count; i++)
            opcodes_place(t, i);
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory for the opcode table");
    memcpy(copy, name, len);
    copy[len] = '\0';
    uint32_t i = t->count++;
    t->names[i] = copy;
    t->lens[i] = (uint32_t)len;
    t->hashes[i] = h;
    opcodes_place(t, i);
    *index = (uint16_t)i;
    return GCX_OK;
}

/* ---- header ------------------------------------------------------------------------------- */

static char *copy_text(const char *s, const char *e)
{
    char *out = malloc((size_t)(e - s) + 1);
    if (out) {
        memcpy(out, s, (size_t)(e - s));
        out[e - s] = '\0';
    }
    return out;
}

/* "(x,y,z)" with optional spaces. */
static int parse_dim3(const char *s, const char *e, uint64_t v[3])
{
    const char *c = s;
    while (c < e && is_space(*c))
        c++;
    if (c == e || *c != '(')
        return 0;
    c++;
    for (int i = 0; i < 3; i++) {
        while (c < e && is_space(*c))
            c++;
        const char *ts = c;
        while (c < e && is_digit(*c))
            c++;
        if (!tok_udec(ts, c, &v[i]))
            return 0;
        while (c < e && is_space(*c))
            c++;
        char want = i < 2 ? ',' : ')';
        if (c == e || *c != want)
            return 0;
        c++;
    }
    while (c < e && is_space(*c))
        c++;
    return c == e;
}

static int header_number(gcx_traceg *p, const char *key, const char *vs, const char *ve, uint64_t max,
                         uint64_t *out)
{
    char q[80];
    if (!tok_udec(vs, ve, out))
        return fail(p, "header '%s' must be a decimal number, found %s", key, quote(q, sizeof q, vs, ve));
    if (*out > max)
        return fail(p, "header '%s' = %" PRIu64 " is out of range (at most %" PRIu64 ")", key, *out, max);
    return GCX_OK;
}

static int header_line(gcx_traceg *p, const char *s, const char *e)
{
    gcx_traceg_header *h = &p->header;
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (!eq)
        return GCX_OK; /* not a key = value line: Accel-Sim ignores those too */
    const char *ks = s + 1, *ke = eq;
    while (ks < ke && is_space(*ks))
        ks++;
    while (ke > ks && is_space(ke[-1]))
        ke--;
    const char *vs = eq + 1, *ve = e;
    while (vs < ve && is_space(*vs))
        vs++;
    size_t kn = (size_t)(ke - ks);
#define KEY_IS(text) (kn == sizeof(text) - 1 && memcmp(ks, text, kn) == 0)
    char q[80];
    uint64_t v = 0;
    int rc = GCX_OK;
    if (KEY_IS("kernel name")) {
        free(h->kernel_name);
        if (!(h->kernel_name = copy_text(vs, ve)))
            return fail_nomem(p, "the kernel name");
        h->present |= GCX_HDR_KERNEL_NAME;
    } else if (KEY_IS("kernel id")) {
        if (!tok_sdec(vs, ve, &v))
            return fail(p, "header 'kernel id' must be a decimal number, found %s", quote(q, sizeof q, vs, ve));
        h->kernel_id = (int64_t)v;
        h->present |= GCX_HDR_KERNEL_ID;
    } else if (KEY_IS("grid dim") || KEY_IS("block dim")) {
        int grid = ks[0] == 'g';
        uint64_t d[3];
        if (!parse_dim3(vs, ve, d))
            return fail(p, "header '%s' must be (x,y,z), found %s", grid ? "grid dim" : "block dim",
                        quote(q, sizeof q, vs, ve));
        /* CUDA's limits: a grid of at most (2^31-1, 65535, 65535) CTAs; a block of at most 2048
         * threads here (the Trace's rule). The linear CTA id must also fit the uint32 column. */
        uint64_t lim[3] = {grid ? 0x7fffffffu : 2048u, grid ? 65535u : 2048u, grid ? 65535u : 2048u};
        for (int i = 0; i < 3; i++)
            if (d[i] < 1 || d[i] > lim[i])
                return fail(p, "%s (%" PRIu64 ",%" PRIu64 ",%" PRIu64 "): dimension %c must be 1 to %" PRIu64,
                            grid ? "grid dim" : "block dim", d[0], d[1], d[2], "xyz"[i], lim[i]);
        uint64_t product = d[0] * d[1] * d[2]; /* < 2^63 with the limits above */
        if (grid && product > (uint64_t)UINT32_MAX + 1)
            return fail(p, "grid dim (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") has %" PRIu64
                        " CTAs, more than the 2^32 a trace can number", d[0], d[1], d[2], product);
        if (!grid && product > 2048)
            return fail(p, "block dim (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") has %" PRIu64
                        " threads, more than any GPU supports (2048)", d[0], d[1], d[2], product);
        uint32_t *dst = grid ? h->grid : h->block;
        for (int i = 0; i < 3; i++)
            dst[i] = (uint32_t)d[i];
        h->present |= grid ? GCX_HDR_GRID : GCX_HDR_BLOCK;
    } else if (KEY_IS("shmem")) {
        rc = header_number(p, "shmem", vs, ve, (uint64_t)16 << 20, &h->shmem); /* 16 MB: beyond any GPU */
        h->present |= GCX_HDR_SHMEM;
    } else if (KEY_IS("nregs")) {
        rc = header_number(p, "nregs", vs, ve, 255, &h->nregs);
        h->present |= GCX_HDR_NREGS;
    } else if (KEY_IS("binary version")) {
        rc = header_number(p, "binary version", vs, ve, 10000, &h->binary_version);
        h->present |= GCX_HDR_BINARY_VERSION;
    } else if (KEY_IS("cuda stream id")) { /* a handle: decimal in the tracers seen, hex accepted too */
        if (!tok_immediate(vs, ve, &h->cuda_stream_id))
            return fail(p, "header 'cuda stream id' must be a number, found %s", quote(q, sizeof q, vs, ve));
        h->present |= GCX_HDR_STREAM_ID;
    } else if (KEY_IS("shmem base_addr") || KEY_IS("local mem base_addr")) {
        int shmem = ks[0] == 's';
        if (!tok_hex(vs, ve, shmem ? &h->shmem_base : &h->local_base))
            return fail(p, "header '%s' must be a hexadecimal address, found %s",
                        shmem ? "shmem base_addr" : "local mem base_addr", quote(q, sizeof q, vs, ve));
        h->present |= shmem ? GCX_HDR_SHMEM_BASE : GCX_HDR_LOCAL_BASE;
    } else if (KEY_IS("nvbit version")) {
        free(h->nvbit_version);
        if (!(h->nvbit_version = copy_text(vs, ve)))
            return fail_nomem(p, "the nvbit version");
        h->present |= GCX_HDR_NVBIT_VERSION;
    } else if (KEY_IS("accelsim tracer version")) {
        if (!tok_udec(vs, ve, &v))
            return fail(p, "header 'accelsim tracer version' must be a decimal number, found %s",
                        quote(q, sizeof q, vs, ve));
        if (v > 5)
            return fail(p, "accelsim tracer version %" PRIu64 " is not supported (this reader knows 1 to 5)", v);
        h->tracer_version = (int)v;
        h->present |= GCX_HDR_TRACER_VERSION;
    } else if (KEY_IS("enable lineinfo")) {
        rc = header_number(p, "enable lineinfo", vs, ve, 1, &v);
        h->lineinfo = (int)v;
        h->present |= GCX_HDR_LINEINFO;
    }
#undef KEY_IS
    return rc;
}

static int end_header(gcx_traceg *p)
{
    gcx_traceg_header *h = &p->header;
    if (!(h->present & GCX_HDR_GRID))
        return fail(p, "the header has no '-grid dim = (x,y,z)' line");
    if (!(h->present & GCX_HDR_BLOCK))
        return fail(p, "the header has no '-block dim = (x,y,z)' line");
    p->grid_ctas = (uint64_t)h->grid[0] * h->grid[1] * h->grid[2];
    uint32_t threads = h->block[0] * h->block[1] * h->block[2];
    p->warps_per_cta = (threads + 31) / 32;
    p->legacy = h->tracer_version < 3;
    p->state = ST_BETWEEN_TB;
    return GCX_OK;
}

/* ---- structure lines ---------------------------------------------------------------------- */

/* Does [s, e) start with keyword `kw` followed by '='? Sets *value to the text after '='. */
static int keyword(const char *s, const char *e, const char *kw, const char **value)
{
    size_t n = strlen(kw);
    if ((size_t)(e - s) < n || memcmp(s, kw, n) != 0)
        return 0;
    const char *c = s + n;
    while (c < e && is_space(*c))
        c++;
    if (c == e || *c != '=')
        return 0;
    c++;
    while (c < e && is_space(*c))
        c++;
    *value = c;
    return 1;
}

static int is_exactly(const char *s, const char *e, const char *text)
{
    size_t n = strlen(text);
    return (size_t)(e - s) == n && memcmp(s, text, n) == 0;
}

static int begin_thread_block(gcx_traceg *p, const char *vs, const char *ve)
{
    uint64_t v[3];
    const char *c = vs;
    char q[80];
    for (int i = 0; i < 3; i++) {
        while (c < ve && is_space(*c))
            c++;
        const char *ts = c;
        while (c < ve && is_digit(*c))
            c++;
        int ok = tok_udec(ts, c, &v[i]);
        while (c < ve && is_space(*c))
            c++;
        if (!ok || (i < 2 ? (c == ve || *c != ',') : c != ve))
            return fail(p, "expected 'thread block = x,y,z', found %s", quote(q, sizeof q, vs, ve));
        if (i < 2)
            c++;
    }
    const uint32_t *g = p->header.grid;
    if (v[0] >= g[0] || v[1] >= g[1] || v[2] >= g[2])
        return fail(p, "thread block (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") is outside the grid (%u,%u,%u)", v[0],
                    v[1], v[2], g[0], g[1], g[2]);
    for (int i = 0; i < 3; i++)
        p->tb[i] = (uint32_t)v[i];
    p->cta = (uint32_t)(v[0] + v[1] * g[0] + v[2] * (uint64_t)g[0] * g[1]);
    p->tb_line = p->line;
    p->warps_seen = 0;
    if (!grow((void **)&p->tbs, &p->tbs_cap, p->n_tbs + 1, sizeof *p->tbs))
        return fail_nomem(p, "the thread block list");
    if (p->n_tbs && p->tbs[p->n_tbs - 1].cta >= p->cta)
        p->tbs_sorted = 0;
    p->tbs[p->n_tbs++] = (gcx_traceg_tb){.cta = p->cta, .line = p->line};
    p->thread_blocks++;
    p->state = ST_IN_TB;
    return GCX_OK;
}

static int begin_warp(gcx_traceg *p, const char *vs, const char *ve)
{
    uint64_t w;
    char q[80];
    if (!tok_udec(vs, ve, &w))
        return fail(p, "expected a warp number after 'warp =', found %s", quote(q, sizeof q, vs, ve));
    if (w >= p->warps_per_cta)
        return fail(p, "warp %" PRIu64 " is outside a CTA of %u warps (block dim (%u,%u,%u))", w, p->warps_per_cta,
                    p->header.block[0], p->header.block[1], p->header.block[2]);
    if (p->warps_seen & ((uint64_t)1 << w))
        return fail(p, "warp %" PRIu64 " appears twice in thread block (%u,%u,%u)", w, p->tb[0], p->tb[1], p->tb[2]);
    p->warps_seen |= (uint64_t)1 << w;
    p->warp = (uint32_t)w;
    p->warp_line = p->line;
    p->state = ST_WARP_INSTS;
    return GCX_OK;
}

static void end_warp(gcx_traceg *p)
{
    gcx_traceg_block *b = &p->blocks[p->n_blocks - 1];
    b->count = p->cols.n_insts - b->first;
    b->addr_count = p->cols.n_addresses - b->addr_first;
    p->state = ST_IN_TB;
}

static int begin_insts(gcx_traceg *p, const char *vs, const char *ve)
{
    uint64_t n;
    char q[80];
    if (!tok_udec(vs, ve, &n))
        return fail(p, "expected an instruction count after 'insts =', found %s", quote(q, sizeof q, vs, ve));
    p->warp_declared = p->warp_left = n;
    p->insts_line = p->line;
    if (n == 0) {
        p->state = ST_IN_TB;
        return GCX_OK;
    }
    if (!grow((void **)&p->blocks, &p->blocks_cap, p->n_blocks + 1, sizeof *p->blocks))
        return fail_nomem(p, "the warp list");
    uint64_t key = (uint64_t)p->cta << 16 | p->warp;
    if (p->n_blocks && p->blocks[p->n_blocks - 1].key >= key)
        p->blocks_sorted = 0;
    p->blocks[p->n_blocks++] = (gcx_traceg_block){
        .key = key, .first = p->cols.n_insts, .addr_first = p->cols.n_addresses, .line = p->warp_line};
    p->state = ST_IN_WARP;
    return GCX_OK;
}

static int short_warp(gcx_traceg *p)
{
    return fail(p, "warp %u of thread block (%u,%u,%u) declares %" PRIu64 " instructions (line %" PRIu64
                ") but has %" PRIu64,
                p->warp, p->tb[0], p->tb[1], p->tb[2], p->warp_declared, p->insts_line,
                p->warp_declared - p->warp_left);
}

static int structure_line(gcx_traceg *p, const char *s, const char *e)
{
    const char *v;
    char q[80];
    switch (p->state) {
    case ST_HEADER:
        if (*s == '-')
            return header_line(p, s, e);
        if (*s == '#') {
            int rc = end_header(p);
            if (rc == GCX_OK && is_exactly(s, e, "#BEGIN_TB"))
                p->state = ST_TB_START;
            return rc;
        }
        return fail(p, "expected a '-key = value' header line or the '#' line that ends the header, found %s",
                    quote(q, sizeof q, s, e));
    case ST_BETWEEN_TB:
        if (is_exactly(s, e, "#BEGIN_TB")) {
            p->state = ST_TB_START;
            return GCX_OK;
        }
        if (*s == '#')
            return GCX_OK; /* a comment */
        return fail(p, "expected #BEGIN_TB, found %s%s", quote(q, sizeof q, s, e),
                    hex_value(*s) >= 0 ? " (an unprocessed NVBit .trace? Accel-Sim's post-traces-processing groups "
                                         "it into a .traceg)"
                                       : "");
    case ST_TB_START:
        if (keyword(s, e, "thread block", &v))
            return begin_thread_block(p, v, e);
        return fail(p, "expected 'thread block = x,y,z' after #BEGIN_TB, found %s", quote(q, sizeof q, s, e));
    case ST_IN_TB:
        if (keyword(s, e, "warp", &v))
            return begin_warp(p, v, e);
        if (is_exactly(s, e, "#END_TB")) {
            p->state = ST_BETWEEN_TB;
            return GCX_OK;
        }
        if (keyword(s, e, "cluster id", &v) || keyword(s, e, "cluster cta", &v) || keyword(s, e, "cluster rank", &v))
            return GCX_OK; /* thread block cluster coordinates (Hopper): not modelled */
        if (p->warps_seen && hex_value(*s) >= 0) /* an instruction line beyond the warp's count */
            return fail(p, "warp %u of thread block (%u,%u,%u) declares %" PRIu64 " instructions (line %" PRIu64
                        ") but has more",
                        p->warp, p->tb[0], p->tb[1], p->tb[2], p->warp_declared, p->insts_line);
        return fail(p, "expected 'warp = N' or #END_TB in thread block (%u,%u,%u), found %s", p->tb[0], p->tb[1],
                    p->tb[2], quote(q, sizeof q, s, e));
    case ST_WARP_INSTS:
        if (keyword(s, e, "insts", &v))
            return begin_insts(p, v, e);
        return fail(p, "expected 'insts = N' after 'warp = %u', found %s", p->warp, quote(q, sizeof q, s, e));
    case ST_IN_WARP:
        return short_warp(p);
    default:
        return fail(p, "input after the end of the trace");
    }
}

/* ---- instruction lines --------------------------------------------------------------------- */

static int instruction(gcx_traceg *p, const char *s, const char *e)
{
    const char *c = s, *ts, *te;
    uint64_t v;
    char q[80];

    if (p->legacy) {
        uint64_t ids[4];
        for (int i = 0; i < 4; i++) {
            next_token(&c, e, &ts, &te);
            if (!tok_udec(ts, te, &ids[i]))
                return expected(p, "the thread block and warp of a legacy (tracer version < 3) line: 4 decimal "
                                   "numbers before the PC",
                                ts, te);
        }
        if (ids[0] != p->tb[0] || ids[1] != p->tb[1] || ids[2] != p->tb[2] || ids[3] != p->warp)
            return fail(p, "line is for thread block (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") warp %" PRIu64
                        " but sits in thread block (%u,%u,%u) warp %u",
                        ids[0], ids[1], ids[2], ids[3], p->tb[0], p->tb[1], p->tb[2], p->warp);
    }
    if (p->header.lineinfo) {
        next_token(&c, e, &ts, &te);
        if (!tok_udec(ts, te, &v))
            return expected(p, "a decimal source line number (the header enables lineinfo)", ts, te);
    }
    uint64_t pc, mask;
    next_token(&c, e, &ts, &te);
    if (!tok_hex(ts, te, &pc))
        return expected(p, "a hexadecimal PC", ts, te);
    if (pc > UINT32_MAX)
        return fail(p, "PC 0x%" PRIx64 " does not fit in 32 bits", pc);
    next_token(&c, e, &ts, &te);
    if (!tok_hex(ts, te, &mask))
        return expected(p, "a hexadecimal active mask", ts, te);
    if (mask > UINT32_MAX)
        return fail(p, "active mask 0x%" PRIx64 " has more than 32 lanes", mask);

    uint8_t dst[GCX_TRACEG_MAX_DST], src[GCX_TRACEG_MAX_SRC];
    memset(dst, GCX_TRACEG_NO_REG, sizeof dst);
    memset(src, GCX_TRACEG_NO_REG, sizeof src);
    uint64_t n_dst, n_src;
    next_token(&c, e, &ts, &te);
    if (!tok_udec(ts, te, &n_dst))
        return expected(p, "the number of destination registers", ts, te);
    if (n_dst > GCX_TRACEG_MAX_DST)
        return fail(p, "%" PRIu64 " destination registers; at most %d are supported", n_dst, GCX_TRACEG_MAX_DST);
    for (uint64_t i = 0; i < n_dst; i++) {
        next_token(&c, e, &ts, &te);
        int r = tok_register(ts, te);
        if (r == -2)
            return fail(p, "register %s is out of range (R0 to R255)", quote(q, sizeof q, ts, te));
        if (r < 0)
            return fail(p, "expected %" PRIu64 " destination registers, found %" PRIu64 " (then %s)", n_dst, i,
                        quote(q, sizeof q, ts, te));
        dst[i] = (uint8_t)r;
    }
    next_token(&c, e, &ts, &te);
    if (tok_register(ts, te) != -1)
        return fail(p, "expected %" PRIu64 " destination registers, found more (%s where the opcode should be)", n_dst,
                    quote(q, sizeof q, ts, te));
    if (!is_opcode_token(ts, te))
        return expected(p, "an opcode", ts, te);
    uint16_t opcode;
    gcx_error ierr;
    if (gcx_opcodes_intern(p->opcodes, ts, (size_t)(te - ts), &opcode, &ierr) != GCX_OK)
        return gcx_fail(&p->failure, ierr.code, "%s:%" PRIu64 ": %s", p->file, p->line, ierr.msg);

    next_token(&c, e, &ts, &te);
    if (!tok_udec(ts, te, &n_src))
        return expected(p, "the number of source registers", ts, te);
    if (n_src > GCX_TRACEG_MAX_SRC)
        return fail(p, "%" PRIu64 " source registers; at most %d are supported", n_src, GCX_TRACEG_MAX_SRC);
    for (uint64_t i = 0; i < n_src; i++) {
        next_token(&c, e, &ts, &te);
        int r = tok_register(ts, te);
        if (r == -2)
            return fail(p, "register %s is out of range (R0 to R255)", quote(q, sizeof q, ts, te));
        if (r < 0)
            return fail(p, "expected %" PRIu64 " source registers, found %" PRIu64 " (then %s)", n_src, i,
                        quote(q, sizeof q, ts, te));
        src[i] = (uint8_t)r;
    }

    uint64_t width;
    next_token(&c, e, &ts, &te);
    if (tok_register(ts, te) != -1)
        return fail(p, "expected %" PRIu64 " source registers, found more (%s where the memory width should be)",
                    n_src, quote(q, sizeof q, ts, te));
    if (!tok_udec(ts, te, &width))
        return expected(p, "the memory width in bytes (decimal)", ts, te);
    /* A lane accesses 1, 2, 4, 8 or 16 bytes (the widths of SASS memory instructions, which the
     * simulator checks too): another width is a damaged line, refused here with its place. */
    if (width != 0 && width != 1 && width != 2 && width != 4 && width != 8 && width != 16)
        return fail(p, "memory width %" PRIu64 " bytes per lane is not an access size (1, 2, 4, 8 or 16; 0: none)",
                    width);

    int lanes = __builtin_popcount((uint32_t)mask);
    size_t n_addr = p->cols.n_addresses;
    if (width > 0) {
        uint64_t mode;
        next_token(&c, e, &ts, &te);
        if (!tok_udec(ts, te, &mode))
            return expected(p, "an address mode (0, 1 or 2) after the memory width", ts, te);
        if (mode > 2)
            return fail(p, "unknown address mode %" PRIu64 " (expected 0: list, 1: base and stride, 2: base and "
                        "deltas)", mode);
        if (!grow((void **)&p->cols.addresses, &p->addr_cap, n_addr + 32, sizeof *p->cols.addresses))
            return fail_nomem(p, "the address array");
        uint64_t *out = p->cols.addresses + n_addr;
        if (mode == 0) {
            for (int k = 0; k < lanes; k++) {
                next_token(&c, e, &ts, &te);
                if (!tok_hex(ts, te, &out[k])) {
                    if (ts == te)
                        return fail(p, "expected %d addresses (one per active lane), found %d", lanes, k);
                    return expected(p, "a hexadecimal address", ts, te);
                }
            }
        } else {
            uint64_t base, step;
            next_token(&c, e, &ts, &te);
            if (!tok_hex(ts, te, &base))
                return expected(p, "a hexadecimal base address", ts, te);
            if (mode == 1) {
                next_token(&c, e, &ts, &te);
                if (!tok_sdec(ts, te, &step))
                    return expected(p, "a decimal address stride", ts, te);
                for (int k = 0; k < lanes; k++)
                    out[k] = base + (uint64_t)k * step; /* modulo 2^64, as the tracer's arithmetic */
            } else {
                uint64_t a = base;
                for (int k = 0; k < lanes; k++) {
                    if (k > 0) {
                        next_token(&c, e, &ts, &te);
                        if (!tok_sdec(ts, te, &step)) {
                            if (ts == te)
                                return fail(p, "expected %d address deltas (active lanes - 1), found %d", lanes - 1,
                                            k - 1);
                            return expected(p, "a decimal address delta", ts, te);
                        }
                        a += step;
                    }
                    out[k] = a;
                }
            }
        }
    }
    if (p->header.tracer_version >= 5) {
        next_token(&c, e, &ts, &te);
        if (!tok_immediate(ts, te, &v))
            return expected(p, "the immediate that ends a tracer version 5 line", ts, te);
    }
    if (next_token(&c, e, &ts, &te))
        return fail(p, "unexpected %s after the end of the instruction (too many addresses or operands?)",
                    quote(q, sizeof q, ts, te));

    size_t i = p->cols.n_insts;
    if (!grow_insts(p, i + 1))
        return fail_nomem(p, "the instruction columns");
    gcx_traceg_columns *k = &p->cols;
    k->cta[i] = p->cta;
    k->warp[i] = (uint16_t)p->warp;
    k->pc[i] = (uint32_t)pc;
    k->opcode[i] = opcode;
    k->mask[i] = (uint32_t)mask;
    k->width[i] = (uint8_t)width;
    memcpy(k->dst + i * GCX_TRACEG_MAX_DST, dst, GCX_TRACEG_MAX_DST);
    memcpy(k->src + i * GCX_TRACEG_MAX_SRC, src, GCX_TRACEG_MAX_SRC);
    k->addr_offset[i] = n_addr;
    k->n_insts = i + 1;
    if (width > 0)
        k->n_addresses = n_addr + (size_t)lanes;
    if (--p->warp_left == 0)
        end_warp(p);
    return GCX_OK;
}

static int is_structure_line(const char *s, const char *e)
{
    switch (*s) {
    case '#':
    case 'w':
    case 't':
    case 'i':
        return 1;
    case 'c':
        return e - s >= 7 && memcmp(s, "cluster", 7) == 0;
    default:
        return 0;
    }
}

static int line(gcx_traceg *p, const char *s, const char *e)
{
    p->line++;
    if (e - s > GCX_TRACEG_MAX_LINE)
        return fail(p, "line is longer than %d bytes (not a trace file?)", GCX_TRACEG_MAX_LINE);
    while (e > s && is_space(e[-1]))
        e--;
    while (s < e && is_space(*s))
        s++;
    if (s == e)
        return GCX_OK;
    if (p->state == ST_IN_WARP && !is_structure_line(s, e))
        return instruction(p, s, e);
    return structure_line(p, s, e);
}

/* ---- public entry points ------------------------------------------------------------------- */

int gcx_traceg_init(gcx_traceg *p, const char *file, gcx_opcodes *opcodes, unsigned options, gcx_error *err)
{
    memset(p, 0, sizeof *p);
    p->file = copy_text(file, file + strlen(file));
    if (!p->file)
        return gcx_fail(err, GCX_ERR_NOMEM, "out of memory");
    p->opcodes = opcodes;
    p->options = options;
    p->state = ST_HEADER;
    p->blocks_sorted = p->tbs_sorted = 1;
    return GCX_OK;
}

static int sticky(gcx_traceg *p, gcx_error *err)
{
    if (err)
        *err = p->failure;
    return p->failure.code;
}

int gcx_traceg_feed(gcx_traceg *p, const char *buf, size_t len, gcx_error *err)
{
    if (p->failure.code)
        return sticky(p, err);
    if (p->state == ST_FINISHED)
        return gcx_fail(err, GCX_ERR_VALUE, "%s: input fed after finish", p->file);
    const char *c = buf, *end = buf + len;
    if (p->carry_len) { /* complete the line the previous chunk began */
        const char *nl = memchr(c, '\n', len);
        const char *upto = nl ? nl : end;
        size_t add = (size_t)(upto - c);
        if (p->carry_len + add > GCX_TRACEG_MAX_LINE) {
            p->line++;
            fail(p, "line is longer than %d bytes (not a trace file?)", GCX_TRACEG_MAX_LINE);
            return sticky(p, err);
        }
        if (!grow((void **)&p->carry, &p->carry_cap, p->carry_len + add, 1)) {
            fail_nomem(p, "a line");
            return sticky(p, err);
        }
        memcpy(p->carry + p->carry_len, c, add);
        p->carry_len += add;
        if (!nl)
            return GCX_OK;
        size_t n = p->carry_len;
        p->carry_len = 0;
        if (line(p, p->carry, p->carry + n) != GCX_OK)
            return sticky(p, err);
        c = nl + 1;
    }
    while (c < end) {
        const char *nl = memchr(c, '\n', (size_t)(end - c));
        if (!nl) {
            size_t rest = (size_t)(end - c);
            if (rest > GCX_TRACEG_MAX_LINE) {
                p->line++;
                fail(p, "line is longer than %d bytes (not a trace file?)", GCX_TRACEG_MAX_LINE);
                return sticky(p, err);
            }
            if (!grow((void **)&p->carry, &p->carry_cap, rest, 1)) {
                fail_nomem(p, "a line");
                return sticky(p, err);
            }
            memcpy(p->carry, c, rest);
            p->carry_len = rest;
            break;
        }
        if (line(p, c, nl) != GCX_OK)
            return sticky(p, err);
        c = nl + 1;
    }
    return GCX_OK;
}

static int cmp_u64_pair(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

/* Find a thread block listed twice. */
static int check_duplicate_tbs(gcx_traceg *p)
{
    if (p->tbs_sorted)
        return GCX_OK;
    uint64_t *keys = malloc(p->n_tbs * 2 * sizeof *keys);
    if (!keys)
        return fail_nomem(p, "the thread block list");
    for (size_t i = 0; i < p->n_tbs; i++) {
        keys[2 * i] = p->tbs[i].cta;
        keys[2 * i + 1] = p->tbs[i].line;
    }
    qsort(keys, p->n_tbs, 2 * sizeof *keys, cmp_u64_pair);
    int rc = GCX_OK;
    for (size_t i = 1; i < p->n_tbs && rc == GCX_OK; i++)
        if (keys[2 * i] == keys[2 * i - 2]) {
            const uint32_t *g = p->header.grid;
            uint64_t cta = keys[2 * i];
            rc = gcx_fail(&p->failure, GCX_ERR_TRACE,
                          "%s:%" PRIu64 ": thread block (%" PRIu64 ",%" PRIu64 ",%" PRIu64 ") appears twice (lines %" PRIu64
                          " and %" PRIu64 ")",
                          p->file, keys[2 * i + 1], cta % g[0], cta / g[0] % g[1], cta / ((uint64_t)g[0] * g[1]),
                          keys[2 * i - 1], keys[2 * i + 1]);
        }
    free(keys);
    return rc;
}

/* Reorder one column's blocks of rows into (cta, warp) order. */
static int permute(void **col, size_t row_bytes, size_t rows, const uint64_t *order, const gcx_traceg_block *blocks,
                   size_t n_blocks, int addresses)
{
    if (rows == 0)
        return 1;
    unsigned char *out = malloc(rows * row_bytes), *in = *col;
    if (!out)
        return 0;
    size_t at = 0;
    for (size_t i = 0; i < n_blocks; i++) {
        const gcx_traceg_block *b = &blocks[order[2 * i + 1]];
        size_t first = addresses ? b->addr_first : b->first, count = addresses ? b->addr_count : b->count;
        memcpy(out + at * row_bytes, in + first * row_bytes, count * row_bytes);
        at += count;
    }
    free(in);
    *col = out;
    return 1;
}

static int sort_rows(gcx_traceg *p)
{
    if (p->blocks_sorted)
        return GCX_OK;
    uint64_t *order = malloc(p->n_blocks * 2 * sizeof *order);
    if (!order)
        return fail_nomem(p, "the warp list");
    for (size_t i = 0; i < p->n_blocks; i++) {
        order[2 * i] = p->blocks[i].key;
        order[2 * i + 1] = i;
    }
    qsort(order, p->n_blocks, 2 * sizeof *order, cmp_u64_pair);
    for (size_t i = 1; i < p->n_blocks; i++)
        if (order[2 * i] == order[2 * i - 2]) {
            const gcx_traceg_block *a = &p->blocks[order[2 * i - 1]], *b = &p->blocks[order[2 * i + 1]];
            free(order);
            return gcx_fail(&p->failure, GCX_ERR_TRACE,
                            "%s:%" PRIu64 ": warp %u of CTA %u appears twice (lines %" PRIu64 " and %" PRIu64 ")",
                            p->file, b->line, (unsigned)(b->key & 0xffff), (unsigned)(b->key >> 16), a->line, b->line);
        }
    gcx_traceg_columns *k = &p->cols;
    size_t n = k->n_insts;
    int ok = permute((void **)&k->cta, sizeof *k->cta, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->warp, sizeof *k->warp, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->pc, sizeof *k->pc, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->opcode, sizeof *k->opcode, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->mask, sizeof *k->mask, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->width, sizeof *k->width, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->dst, GCX_TRACEG_MAX_DST, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->src, GCX_TRACEG_MAX_SRC, n, order, p->blocks, p->n_blocks, 0) &&
             permute((void **)&k->addresses, sizeof *k->addresses, k->n_addresses, order, p->blocks, p->n_blocks, 1);
    free(order);
    if (!ok)
        return fail_nomem(p, "a sorted column");
    p->inst_cap = n;
    p->addr_cap = k->n_addresses;
    /* Every column now has exactly n rows (addresses exactly n_addresses); offsets follow the new order. */
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        k->addr_offset[i] = off;
        if (k->width[i])
            off += (uint64_t)__builtin_popcount(k->mask[i]);
    }
    return GCX_OK;
}

/* Give back the unused tail of a column (realloc to a smaller size never fails in practice; if it
 * does, the larger block is kept). */
static void trim(void **col, size_t bytes)
{
    if (!*col)
        return;
    if (bytes == 0) {
        free(*col);
        *col = NULL;
        return;
    }
    void *q = realloc(*col, bytes);
    if (q)
        *col = q;
}

int gcx_traceg_finish(gcx_traceg *p, gcx_error *err)
{
    if (p->failure.code)
        return sticky(p, err);
    if (p->state == ST_FINISHED)
        return GCX_OK;
    if (p->carry_len) {
        size_t n = p->carry_len;
        p->carry_len = 0;
        if (line(p, p->carry, p->carry + n) != GCX_OK)
            return sticky(p, err);
    }
    switch (p->state) {
    case ST_HEADER:
        fail(p, "the file ends in its header, before any thread block (empty, truncated or not a .traceg file?)");
        return sticky(p, err);
    case ST_BETWEEN_TB:
        break;
    case ST_IN_WARP:
        fail(p, "the file ends inside warp %u of thread block (%u,%u,%u) (line %" PRIu64 ") after %" PRIu64
             " of its %" PRIu64 " instructions (truncated?)",
             p->warp, p->tb[0], p->tb[1], p->tb[2], p->warp_line, p->warp_declared - p->warp_left, p->warp_declared);
        return sticky(p, err);
    default:
        fail(p, "the file ends inside a thread block (no #END_TB; truncated?)");
        return sticky(p, err);
    }
    if (p->thread_blocks == 0) {
        fail(p, "the file has a header but no thread block");
        return sticky(p, err);
    }
    if (check_duplicate_tbs(p) != GCX_OK || sort_rows(p) != GCX_OK)
        return sticky(p, err);
    if (p->thread_blocks != p->grid_ctas && !(p->options & GCX_TRACEG_ALLOW_MISSING_CTAS)) {
        const uint32_t *g = p->header.grid;
        fail(p, "the file holds %" PRIu64 " of the %" PRIu64 " thread blocks of its grid (%u,%u,%u) (truncated? "
             "allow missing CTAs to load a partial grid)",
             p->thread_blocks, p->grid_ctas, g[0], g[1], g[2]);
        return sticky(p, err);
    }
    gcx_traceg_columns *k = &p->cols;
    size_t n = k->n_insts;
    trim((void **)&k->cta, n * sizeof *k->cta);
    trim((void **)&k->warp, n * sizeof *k->warp);
    trim((void **)&k->pc, n * sizeof *k->pc);
    trim((void **)&k->opcode, n * sizeof *k->opcode);
    trim((void **)&k->mask, n * sizeof *k->mask);
    trim((void **)&k->width, n * sizeof *k->width);
    trim((void **)&k->dst, n * GCX_TRACEG_MAX_DST);
    trim((void **)&k->src, n * GCX_TRACEG_MAX_SRC);
    trim((void **)&k->addr_offset, n * sizeof *k->addr_offset);
    trim((void **)&k->addresses, k->n_addresses * sizeof *k->addresses);
    p->inst_cap = n;
    p->addr_cap = k->n_addresses;
    free(p->carry);
    p->carry = NULL;
    p->carry_cap = 0;
    p->state = ST_FINISHED;
    return GCX_OK;
}

void gcx_traceg_take_columns(gcx_traceg *p, gcx_traceg_columns *out)
{
    *out = p->cols;
    memset(&p->cols, 0, sizeof p->cols);
    p->inst_cap = p->addr_cap = 0;
}

void gcx_traceg_columns_free(gcx_traceg_columns *k)
{
    free(k->cta);
    free(k->warp);
    free(k->pc);
    free(k->opcode);
    free(k->mask);
    free(k->width);
    free(k->dst);
    free(k->src);
    free(k->addr_offset);
    free(k->addresses);
    memset(k, 0, sizeof *k);
}

void gcx_traceg_free(gcx_traceg *p)
{
    gcx_traceg_columns_free(&p->cols);
    free(p->header.kernel_name);
    free(p->header.nvbit_version);
    free(p->blocks);
    free(p->tbs);
    free(p->carry);
    free(p->file);
    memset(p, 0, sizeof *p);
}

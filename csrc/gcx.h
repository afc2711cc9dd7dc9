/* Common definitions of the gpucachex C core: status codes, the error record every fallible
 * function fills, and the seeded random number generator (no global state anywhere). */
#ifndef GCX_H
#define GCX_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Status codes. Every fallible core function returns one and fills a gcx_error. */
enum {
    GCX_OK = 0,
    GCX_ERR_VALUE = 1,    /* bad argument or configuration value */
    GCX_ERR_NOMEM = 2,    /* allocation failed */
    GCX_ERR_TRACE = 3,    /* malformed workload or trace */
    GCX_ERR_DEADLOCK = 4, /* the timing model made no progress */
    GCX_ERR_IO = 5,       /* a file could not be read */
    GCX_ERR_INTERNAL = 6, /* a model inconsistency (a bug): reported, never a crash or hang */
    GCX_ERR_STOPPED = 7,  /* the caller asked the run to stop (Ctrl-C) */
};

typedef struct gcx_error {
    int code;
    char msg[512];
} gcx_error;

/* Record an error (printf-style message) and return its code, so callers can write
 * `return gcx_fail(err, GCX_ERR_VALUE, "sets must be > 0, got %u", sets);`. */
int gcx_fail(gcx_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A double as the shortest decimal that reads back as the same number, for error messages: %g keeps
 * six digits, so a refused l1d.size_kb of 16.0000001 read "16", a size that looks valid, and a
 * bound of 16777216 read "1.67772e+07". Use as `gcx_fail(err, c, "got %s", gcx_num(v).s)`: the
 * buffer lives until the end of the full expression. */
typedef struct gcx_numtext {
    char s[32];
} gcx_numtext;

gcx_numtext gcx_num(double value);

/* The range check of every numeric setting (configuration keys, technique and policy parameters):
 * GCX_OK, or a failure "<prefix><name> must be between LO and HI, got V" (NaN and infinities too),
 * or "... must be an integer" when `integer` and `value` has a fraction. */
int gcx_check_number(const char *prefix, const char *name, double value, double lo, double hi, int integer,
                     gcx_error *err);

/* xoshiro256** seeded through splitmix64: fast, good quality, and its state lives in the
 * object that owns it, so two simulations never share a stream. */
typedef struct gcx_rng {
    uint64_t s[4];
} gcx_rng;

void gcx_rng_seed(gcx_rng *r, uint64_t seed);

static inline uint64_t gcx_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t gcx_rng_next(gcx_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = gcx_rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = gcx_rotl64(s[3], 45);
    return result;
}

/* Uniform integer in [0, n) for n > 0 (Lemire's multiply-shift; the tiny bias for huge n
 * is irrelevant at the sizes used here: n is at most a few thousand). */
static inline uint32_t gcx_rng_below(gcx_rng *r, uint32_t n)
{
    return (uint32_t)(((gcx_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static inline int gcx_popcount64(uint64_t x) { return __builtin_popcountll(x); }
static inline int gcx_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }
static inline uint32_t gcx_log2(uint64_t x) { return x ? 63u - (uint32_t)__builtin_clzll(x) : 0u; }

#endif

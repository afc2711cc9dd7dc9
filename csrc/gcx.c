/* Shared helpers of the C core: error recording and random-number seeding. */
#include "gcx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int gcx_fail(gcx_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

gcx_numtext gcx_num(double value)
{
    gcx_numtext t;
    for (int digits = 6; digits < 17; digits++) {
        snprintf(t.s, sizeof t.s, "%.*g", digits, value);
        if (strtod(t.s, NULL) == value)
            return t;
    }
    snprintf(t.s, sizeof t.s, "%.17g", value); /* 17 digits read back any double; NaN never compares equal */
    return t;
}

int gcx_check_number(const char *prefix, const char *name, double value, double lo, double hi, int integer,
                     gcx_error *err)
{
    if (!(isfinite(value) && value >= lo && value <= hi))
        return gcx_fail(err, GCX_ERR_VALUE, "%s%s must be between %s and %s, got %s", prefix, name, gcx_num(lo).s,
                        gcx_num(hi).s, gcx_num(value).s);
    if (integer && value != floor(value))
        return gcx_fail(err, GCX_ERR_VALUE, "%s%s must be an integer, got %s", prefix, name, gcx_num(value).s);
    return GCX_OK;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void gcx_rng_seed(gcx_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

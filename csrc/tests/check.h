/* A minimal test harness for the C core's unit tests: CHECK macros that report file and line,
 * and a runner; no dependencies, so the core is tested without Python. */
#ifndef GCX_CHECK_H
#define GCX_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int gcx_check_failures = 0;
static int gcx_check_count = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        gcx_check_count++;                                                                         \
        if (!(cond)) {                                                                             \
            gcx_check_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                         \
        gcx_check_count++;                                                                         \
        if (va_ != vb_) {                                                                          \
            gcx_check_failures++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n",      \
                    __FILE__, __LINE__, #a, #b, va_, vb_);                                         \
        }                                                                                          \
    } while (0)

#define RUN(test)                                                                                  \
    do {                                                                                           \
        int before_ = gcx_check_failures;                                                          \
        test();                                                                                    \
        printf("%-50s %s\n", #test, gcx_check_failures == before_ ? "ok" : "FAILED");              \
    } while (0)

#define CHECK_SUMMARY()                                                                            \
    (printf("%d checks, %d failed\n", gcx_check_count, gcx_check_failures), gcx_check_failures ? 1 : 0)

#endif

/* Searching one set of the stamped fast path: which way holds a line address, and which way has
 * the smallest stamp (lowest way on ties). A scalar version for any machine and an AVX2 version
 * for sets whose ways are a multiple of 4, chosen at run time; both return identical answers.
 * Stamps are unsigned 32-bit (see gcx_cache_renumber_stamps for wrap-around). */
#ifndef GCX_SET_SEARCH_H
#define GCX_SET_SEARCH_H

#include <stdint.h>

static inline __attribute__((always_inline)) void gcx_search_scalar(const uint64_t *tag, const uint32_t *repl,
                                                                     uint32_t ways, uint64_t la, uint32_t *found,
                                                                     uint32_t *victim)
{
    uint32_t f = ways, v = 0;
    uint32_t vmin = repl[0];
    for (uint32_t k = 0; k < ways; k++) {
        f = tag[k] == la ? k : f;
        int smaller = repl[k] < vmin;
        vmin = smaller ? repl[k] : vmin;
        v = smaller ? k : v;
    }
    *found = f;
    *victim = v;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(GCX_NO_SIMD)
#define GCX_HAVE_AVX2_PATH 1
#include <immintrin.h>

#define GCX_AVX2 __attribute__((target("avx2")))

static inline __attribute__((always_inline)) GCX_AVX2 __m256i gcx_min_epi64(__m256i a, __m256i b)
{
    return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b));
}

/* ways must be a multiple of 4 and at most 64. Tags compare four at a time; stamps are unsigned
 * 32-bit, reduced eight at a time when ways allows and four at a time otherwise. */
static inline __attribute__((always_inline)) GCX_AVX2 void gcx_search_avx2(const uint64_t *tag, const uint32_t *repl,
                                                                            uint32_t ways, uint64_t la,
                                                                            uint32_t *found, uint32_t *victim)
{
    __m256i key = _mm256_set1_epi64x((long long)la);
    uint64_t hit_mask = 0;
    for (uint32_t k = 0; k < ways; k += 4) {
        __m256i t = _mm256_loadu_si256((const __m256i *)(tag + k));
        hit_mask |= (uint64_t)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(t, key))) << k;
    }
    uint64_t min_mask = 0;
    if (ways % 8 == 0) {
        __m256i vmin = _mm256_loadu_si256((const __m256i *)repl);
        for (uint32_t k = 8; k < ways; k += 8)
            vmin = _mm256_min_epu32(vmin, _mm256_loadu_si256((const __m256i *)(repl + k)));
        vmin = _mm256_min_epu32(vmin, _mm256_permute4x64_epi64(vmin, 0x4E));
        vmin = _mm256_min_epu32(vmin, _mm256_shuffle_epi32(vmin, 0x4E));
        vmin = _mm256_min_epu32(vmin, _mm256_shuffle_epi32(vmin, 0xB1));
        for (uint32_t k = 0; k < ways; k += 8) {
            __m256i r = _mm256_loadu_si256((const __m256i *)(repl + k));
            min_mask |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(r, vmin))) << k;
        }
    } else {
        __m128i vmin = _mm_loadu_si128((const __m128i *)repl);
        for (uint32_t k = 4; k < ways; k += 4)
            vmin = _mm_min_epu32(vmin, _mm_loadu_si128((const __m128i *)(repl + k)));
        vmin = _mm_min_epu32(vmin, _mm_shuffle_epi32(vmin, 0x4E));
        vmin = _mm_min_epu32(vmin, _mm_shuffle_epi32(vmin, 0xB1));
        for (uint32_t k = 0; k < ways; k += 4) {
            __m128i r = _mm_loadu_si128((const __m128i *)(repl + k));
            min_mask |= (uint64_t)(uint32_t)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(r, vmin))) << k;
        }
    }
    *found = hit_mask ? (uint32_t)__builtin_ctzll(hit_mask) : ways;
    *victim = (uint32_t)__builtin_ctzll(min_mask);
}
#endif

#endif

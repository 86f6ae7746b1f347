/* symgrad runtime: the C every generated kernel includes.
 * The batch loop (OpenMP when the compiler has it, serial otherwise) and the
 * special functions C99's <math.h> lacks. Only standard headers. */
#ifndef SYMGRAD_RT_H
#define SYMGRAD_RT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* The batch machinery moves numbers through SIMD registers (4x4 transposes, non-temporal
 * stores). GCC spells that with its vector extensions and builtins; other compilers get
 * <immintrin.h>, whose headers alone take a tenth of a second to parse (a third of a small
 * kernel's compile). A unit of segments only (the further translation units of a large
 * kernel, defining SYMGRAD_SEGMENT_UNIT) needs none of it. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#define SYMGRAD_GCC_VECTORS 1
typedef double symgrad_v2d __attribute__((vector_size(16)));
typedef double symgrad_v4d __attribute__((vector_size(32)));
typedef double symgrad_v8d __attribute__((vector_size(64)));
typedef float symgrad_v4f __attribute__((vector_size(16)));
typedef float symgrad_v8f __attribute__((vector_size(32)));
typedef float symgrad_v16f __attribute__((vector_size(64)));
typedef long long symgrad_v4i __attribute__((vector_size(32)));
typedef int symgrad_v4fi __attribute__((vector_size(16)));
#define SYMGRAD_LOADV(V, p) __extension__({ V sg_v_; __builtin_memcpy(&sg_v_, (p), sizeof(V)); sg_v_; })
#define SYMGRAD_STOREV(p, v) __builtin_memcpy((p), &(v), sizeof(v))
#elif defined(__SSE2__) && !defined(SYMGRAD_SEGMENT_UNIT)
#include <immintrin.h>
#endif

/* SYMGRAD_NOIPA: a function compiled once, generic in its arguments, neither inlined nor copied
 * for a caller's constants (GCC's copies of a tail specialised to one point, and of its
 * gathers and scatters unrolled and versioned for each size, were half of the compile of
 * rosen8's tail unit). SYMGRAD_GENERIC: such a helper of this header, for work done once a
 * batch or once a tile, beside which one call is nothing. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define SYMGRAD_NOIPA __attribute__((noipa))
#elif defined(__GNUC__) && !defined(__clang__)
#define SYMGRAD_NOIPA __attribute__((noinline, noclone))
#elif defined(__GNUC__)
#define SYMGRAD_NOIPA __attribute__((noinline))
#else
#define SYMGRAD_NOIPA
#endif
#if defined(__GNUC__)
#define SYMGRAD_GENERIC static SYMGRAD_NOIPA __attribute__((unused))
#else
#define SYMGRAD_GENERIC static
#endif

/* Generated kernels evaluate points in blocks of one SIMD vector of their arithmetic type
 * (4 doubles, float32 kernels computing in double included, or 8 floats; 8 or 16 for
 * kernels of scalars on CPUs with 512-bit vectors). Every point of every call,
 * tails and single points included, runs through the same block code, so a result never
 * depends on the batch size or the thread count.
 *
 * SYMGRAD_BLOCKS(call) runs `call` for `sg_b` over the `sg_nb` blocks of a batch, on the
 * thread team when there are at least `sg_par_min` blocks (locals of the batch function).
 * Fewer blocks never enter OpenMP: `parallel if(0)` still makes a team of one (malloc and
 * futex calls, about 200 ns), more than a small kernel's whole call. */
#ifdef _OPENMP
#define SYMGRAD_BLOCKS(...)                                                              \
    if (sg_nb >= sg_par_min) {                                                           \
        _Pragma("omp parallel for schedule(static)")                                     \
        for (int64_t sg_b = 0; sg_b < sg_nb; ++sg_b) __VA_ARGS__;                        \
    } else {                                                                             \
        for (int64_t sg_b = 0; sg_b < sg_nb; ++sg_b) __VA_ARGS__;                        \
    }
#else
#define SYMGRAD_BLOCKS(...)                                                              \
    for (int64_t sg_b = 0; sg_b < sg_nb; ++sg_b) __VA_ARGS__;
#endif

/* SYMGRAD_RANGES(call): the same split of sg_nb items over the team, one call per thread
 * with its range [sg_lo, sg_hi), for work that sets up once per thread; each thread then
 * fences the non-temporal stores it made (`sg_nt`). */
#ifdef _OPENMP
#include <omp.h>
#define SYMGRAD_RANGES(...)                                                              \
    _Pragma("omp parallel if(sg_nb >= sg_par_min)") {                                    \
        const int64_t sg_nth = omp_get_num_threads(), sg_id = omp_get_thread_num();      \
        const int64_t sg_lo = sg_nb * sg_id / sg_nth, sg_hi = sg_nb * (sg_id + 1) / sg_nth; \
        __VA_ARGS__;                                                                     \
        symgrad_fence(sg_nt);                                                            \
    }
#else
#define SYMGRAD_RANGES(...)                                                              \
    { const int64_t sg_lo = 0, sg_hi = sg_nb; __VA_ARGS__; symgrad_fence(sg_nt); }
#endif

/* SYMGRAD_OPAQUE(p): p, with its target's contents hidden from the optimiser. GCC 12 with
 * AVX-512 folds loads from a constant table into wrong vector constants (a copy of
 * table[228..284) of 441 floats became a repeating pattern); tables are read through this. */
#if defined(__GNUC__)
static inline const void *symgrad_opaque(const void *p) {
    __asm__("" : "+r"(p));
    return p;
}
#define SYMGRAD_OPAQUE(p) ((__typeof__(&(p)[0]))symgrad_opaque(p))
#else
#define SYMGRAD_OPAQUE(p) (p)
#endif

#ifndef SYMGRAD_SEGMENT_UNIT
/* symgrad_stream_T(dst, src, m, nt): copy m numbers; with nt, the whole 64-byte lines of
 * dst with non-temporal stores written back to back (so that each line leaves complete),
 * the partial lines at either end with plain stores. The plain parts are memcpy calls (not
 * made for nothing: GCC inlines them as `rep movsq`, tens of cycles to start): as
 * loops, GCC -O3 vectorised each with its peeled versions, a fifth of a small kernel's
 * compile (seed's gradient: cc1 0.29-0.30 s against 0.23-0.25 s). */
#if defined(SYMGRAD_GCC_VECTORS) && defined(__AVX512F__)
#define SYMGRAD_NT_double(d, s) __builtin_ia32_movntpd512(d, SYMGRAD_LOADV(symgrad_v8d, s))
#define SYMGRAD_NT_float(d, s) __builtin_ia32_movntps512(d, SYMGRAD_LOADV(symgrad_v16f, s))
#define SYMGRAD_NT_BYTES 64
#elif defined(SYMGRAD_GCC_VECTORS) && defined(__AVX__)
#define SYMGRAD_NT_double(d, s) __builtin_ia32_movntpd256(d, SYMGRAD_LOADV(symgrad_v4d, s))
#define SYMGRAD_NT_float(d, s) __builtin_ia32_movntps256(d, SYMGRAD_LOADV(symgrad_v8f, s))
#define SYMGRAD_NT_BYTES 32
#elif defined(SYMGRAD_GCC_VECTORS) && defined(__SSE2__)
#define SYMGRAD_NT_double(d, s) __builtin_ia32_movntpd(d, SYMGRAD_LOADV(symgrad_v2d, s))
#define SYMGRAD_NT_float(d, s) __builtin_ia32_movntps(d, SYMGRAD_LOADV(symgrad_v4f, s))
#define SYMGRAD_NT_BYTES 16
#elif defined(__AVX512F__)
#define SYMGRAD_NT_double(d, s) _mm512_stream_pd(d, _mm512_loadu_pd(s))
#define SYMGRAD_NT_float(d, s) _mm512_stream_ps(d, _mm512_loadu_ps(s))
#define SYMGRAD_NT_BYTES 64
#elif defined(__AVX__)
#define SYMGRAD_NT_double(d, s) _mm256_stream_pd(d, _mm256_loadu_pd(s))
#define SYMGRAD_NT_float(d, s) _mm256_stream_ps(d, _mm256_loadu_ps(s))
#define SYMGRAD_NT_BYTES 32
#elif defined(__SSE2__)
#define SYMGRAD_NT_double(d, s) _mm_stream_pd(d, _mm_loadu_pd(s))
#define SYMGRAD_NT_float(d, s) _mm_stream_ps(d, _mm_loadu_ps(s))
#define SYMGRAD_NT_BYTES 16
#endif
#ifdef SYMGRAD_NT_BYTES
#define SYMGRAD_STREAM(T)                                                                 \
    SYMGRAD_GENERIC void symgrad_stream_##T(T *restrict dst, const T *restrict src, int64_t m, \
                                            int nt) {                                     \
        const int64_t line = 64 / sizeof(T), step = SYMGRAD_NT_BYTES / sizeof(T);        \
        int64_t k = 0;                                                                   \
        if (nt && (uintptr_t)dst % sizeof(T) == 0) {                                     \
            k = (int64_t)((64 - ((uintptr_t)dst & 63)) & 63) / (int64_t)sizeof(T);       \
            if (k > m) k = m;                                                            \
            if (k) memcpy(dst, src, (size_t)k * sizeof(T));                              \
            for (; k + line <= m; k += line)                                             \
                for (int64_t v = 0; v < line; v += step) SYMGRAD_NT_##T(dst + k + v, src + k + v); \
        }                                                                                \
        if (k < m) memcpy(dst + k, src + k, (size_t)(m - k) * sizeof(T));                \
    }
#else
#define SYMGRAD_STREAM(T)                                                                 \
    static inline void symgrad_stream_##T(T *restrict dst, const T *restrict src, int64_t m, \
                                          int nt) {                                       \
        (void)nt;                                                                        \
        memcpy(dst, src, (size_t)m * sizeof(T));                                         \
    }
#endif
SYMGRAD_STREAM(double)
SYMGRAD_STREAM(float)

/* Non-temporal stores are weakly ordered: each thread fences its own once, at the end. */
static inline void symgrad_fence(int nt) {
#if defined(SYMGRAD_GCC_VECTORS) && defined(__SSE2__)
    if (nt) __builtin_ia32_sfence();
#elif defined(__SSE2__)
    if (nt) _mm_sfence();
#else
    (void)nt;
#endif
}
#endif

/* The loop over the lanes of a block is a SIMD loop: SYMGRAD_LANES(w) of the block's w lanes,
 * as w-lane vectors, so that every kernel of a block width calls the same libmvec variant
 * (GCC tuned for znver1 prefers 128-bit vectors, and took the 2-lane variants for a float64
 * kernel and the 4-lane ones for its float32 twin computing in double: the last bit of tanh
 * differed). SYMGRAD_SIMD: a loop of any length (render/loops.py). */
#if defined(_OPENMP)
#define SYMGRAD_SIMD _Pragma("omp simd")
#define SYMGRAD_PRAGMA(x) _Pragma(#x)
#define SYMGRAD_LANES(w) SYMGRAD_PRAGMA(omp simd simdlen(w))
#else
#define SYMGRAD_SIMD
#define SYMGRAD_LANES(w)
#endif

/* Segments of a large kernel live in several translation units of one library.
 * The statements of a segment always fold into its SIMD lane loop (else the loop cannot
 * be vectorised); a large segment's lane loop stays one function, called, not copied. */
#if defined(__GNUC__)
#define SYMGRAD_HIDDEN __attribute__((visibility("hidden")))
#define SYMGRAD_ALWAYS_INLINE static inline __attribute__((always_inline))
#define SYMGRAD_NOINLINE __attribute__((noinline))
#else
#define SYMGRAD_HIDDEN
#define SYMGRAD_ALWAYS_INLINE static inline
#define SYMGRAD_NOINLINE
#endif

/* c ? a : +0.0 as a bit mask: the loops' selects with a 0 branch (a guard taking a term away)
   stay vectorisable where gcc gives up on a conditional inside an accumulation. c is an int:
   a comparison passed as a double (0.0 or 1.0) kept gcc 12 from vectorising the loop. */
#define SYMGRAD_KEEP(T, U, S)                      \
    static inline T symgrad_keep##S(int c, T a) {  \
        U m = -(U)(c != 0), b;                      \
        memcpy(&b, &a, sizeof b);                   \
        b &= m;                                     \
        memcpy(&a, &b, sizeof a);                   \
        return a;                                   \
    }
SYMGRAD_KEEP(double, uint64_t, )
SYMGRAD_KEEP(float, uint32_t, f)

/* Heap memory for the local arrays of large kernels; running out of memory is reported, not ignored. */
static inline void *symgrad_alloc(size_t bytes) {
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "symgrad: out of memory allocating %zu bytes for a kernel\n", bytes);
        abort();
    }
    return p;
}

#ifndef SYMGRAD_SEGMENT_UNIT
/* A block's W points of s numbers move between point order (p[j*s + k]) and lane order
 * (l[k*W + j]): symgrad_transpose_T(p, s, l, W) for arguments, and for results
 * symgrad_untranspose_T(l, m, s, p, W), which writes the first m numbers of each point.
 * With AVX, whole 4x4 tiles of doubles move through registers (floats: SSE registers);
 * float arguments of double lanes convert on the way (symgrad_transpose_float_double). */
#define SYMGRAD_TRANSPOSE(T)                                                               \
    static inline void symgrad_transpose_##T##_generic(const T *restrict p, int64_t s,     \
                                                       T *restrict l, int W) {             \
        for (int64_t j = 0; j < W; ++j)                                                    \
            for (int64_t k = 0; k < s; ++k) l[k * W + j] = p[j * s + k];                   \
    }                                                                                      \
    static inline void symgrad_untranspose_##T##_generic(const T *restrict l, int64_t m,   \
                                                         int64_t s, T *restrict p, int W) { \
        for (int64_t j = 0; j < W; ++j)                                                    \
            for (int64_t k = 0; k < m; ++k) p[j * s + k] = l[k * W + j];                   \
    }
SYMGRAD_TRANSPOSE(double)
SYMGRAD_TRANSPOSE(float)

/* Whole 4x4 tiles through registers of type V (LOAD/STORE unaligned, T4X4 transposes four
 * rows in place), the numbers past the last whole tile one by one; W a multiple of 4. */
#define SYMGRAD_TILED(T, V, LOAD, STORE, T4X4)                                                   \
    static inline void symgrad_transpose_##T##_tiled(const T *restrict p, int64_t s,             \
                                                     T *restrict l, int W) {                     \
        const int64_t s4 = s - s % 4;                                                            \
        for (int64_t k = 0; k < s4; k += 4)                                                      \
            for (int j = 0; j < W; j += 4) {                                                     \
                const T *q = p + j * s + k;                                                      \
                V r0 = LOAD(q), r1 = LOAD(q + s), r2 = LOAD(q + 2 * s), r3 = LOAD(q + 3 * s);   \
                T4X4(r0, r1, r2, r3);                                                            \
                STORE(l + k * W + j, r0), STORE(l + (k + 1) * W + j, r1);                        \
                STORE(l + (k + 2) * W + j, r2), STORE(l + (k + 3) * W + j, r3);                  \
            }                                                                                    \
        for (int64_t k = s4; k < s; ++k)                                                         \
            for (int j = 0; j < W; ++j) l[k * W + j] = p[j * s + k];                             \
    }                                                                                            \
    static inline void symgrad_untranspose_##T##_tiled(const T *restrict l, int64_t m,           \
                                                       int64_t s, T *restrict p, int W) {        \
        const int64_t m4 = m - m % 4;                                                            \
        for (int64_t k = 0; k < m4; k += 4)                                                      \
            for (int j = 0; j < W; j += 4) {                                                     \
                T *q = p + j * s + k;                                                            \
                V r0 = LOAD(l + k * W + j), r1 = LOAD(l + (k + 1) * W + j);                      \
                V r2 = LOAD(l + (k + 2) * W + j), r3 = LOAD(l + (k + 3) * W + j);                \
                T4X4(r0, r1, r2, r3);                                                            \
                STORE(q, r0), STORE(q + s, r1), STORE(q + 2 * s, r2), STORE(q + 3 * s, r3);      \
            }                                                                                    \
        for (int64_t k = m4; k < m; ++k)                                                         \
            for (int j = 0; j < W; ++j) p[j * s + k] = l[k * W + j];                             \
    }

#if defined(SYMGRAD_GCC_VECTORS)
/* rows r0..r3 (4 numbers each) -> columns, in place: unpack pairs, then halves (the
 * instructions of _mm256_unpack*_pd / _mm256_permute2f128_pd, _MM_TRANSPOSE4_PS) */
#define SYMGRAD_T4X4_V(V, I, r0, r1, r2, r3)                                              \
    do {                                                                                  \
        V t0 = __builtin_shuffle(r0, r1, (I){0, 4, 2, 6}), t1 = __builtin_shuffle(r0, r1, (I){1, 5, 3, 7}); \
        V t2 = __builtin_shuffle(r2, r3, (I){0, 4, 2, 6}), t3 = __builtin_shuffle(r2, r3, (I){1, 5, 3, 7}); \
        r0 = __builtin_shuffle(t0, t2, (I){0, 1, 4, 5});                                  \
        r1 = __builtin_shuffle(t1, t3, (I){0, 1, 4, 5});                                  \
        r2 = __builtin_shuffle(t0, t2, (I){2, 3, 6, 7});                                  \
        r3 = __builtin_shuffle(t1, t3, (I){2, 3, 6, 7});                                  \
    } while (0)
#define SYMGRAD_T4X4D(r0, r1, r2, r3) SYMGRAD_T4X4_V(symgrad_v4d, symgrad_v4i, r0, r1, r2, r3)
#define SYMGRAD_T4X4F(r0, r1, r2, r3) SYMGRAD_T4X4_V(symgrad_v4f, symgrad_v4fi, r0, r1, r2, r3)
#define SYMGRAD_LOAD4D(p) SYMGRAD_LOADV(symgrad_v4d, p)
#define SYMGRAD_LOAD4F(p) SYMGRAD_LOADV(symgrad_v4f, p)
SYMGRAD_TILED(double, symgrad_v4d, SYMGRAD_LOAD4D, SYMGRAD_STOREV, SYMGRAD_T4X4D)
SYMGRAD_TILED(float, symgrad_v4f, SYMGRAD_LOAD4F, SYMGRAD_STOREV, SYMGRAD_T4X4F)
#endif
#if !defined(SYMGRAD_GCC_VECTORS) && defined(__AVX__)
/* rows r0..r3 (4 doubles each) -> columns, in place */
#define SYMGRAD_T4X4(r0, r1, r2, r3)                                                      \
    do {                                                                                  \
        __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);        \
        __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);        \
        r0 = _mm256_permute2f128_pd(t0, t2, 0x20);                                        \
        r1 = _mm256_permute2f128_pd(t1, t3, 0x20);                                        \
        r2 = _mm256_permute2f128_pd(t0, t2, 0x31);                                        \
        r3 = _mm256_permute2f128_pd(t1, t3, 0x31);                                        \
    } while (0)
SYMGRAD_TILED(double, __m256d, _mm256_loadu_pd, _mm256_storeu_pd, SYMGRAD_T4X4)
#endif
#if !defined(SYMGRAD_GCC_VECTORS) && defined(__SSE2__)
SYMGRAD_TILED(float, __m128, _mm_loadu_ps, _mm_storeu_ps, _MM_TRANSPOSE4_PS)
#endif

/* symgrad_transpose_T / symgrad_untranspose_T: in tiles where TILES keeps them (SYMGRAD_TILES_ON:
 * the registers exist), else number by number */
#define SYMGRAD_TILES_ON(...) __VA_ARGS__
#define SYMGRAD_TILES_OFF(...)
#define SYMGRAD_TRANSPOSE_ENTRY(T, TILES)                                                          \
    static inline void symgrad_transpose_##T(const T *restrict p, int64_t s, T *restrict l, int W) { \
        TILES(if (W % 4 == 0) { symgrad_transpose_##T##_tiled(p, s, l, W); return; })             \
        symgrad_transpose_##T##_generic(p, s, l, W);                                               \
    }                                                                                              \
    static inline void symgrad_untranspose_##T(const T *restrict l, int64_t m, int64_t s,         \
                                               T *restrict p, int W) {                            \
        TILES(if (W % 4 == 0) { symgrad_untranspose_##T##_tiled(l, m, s, p, W); return; })        \
        symgrad_untranspose_##T##_generic(l, m, s, p, W);                                          \
    }
#if defined(SYMGRAD_GCC_VECTORS) || defined(__AVX__)
SYMGRAD_TRANSPOSE_ENTRY(double, SYMGRAD_TILES_ON)
#else
SYMGRAD_TRANSPOSE_ENTRY(double, SYMGRAD_TILES_OFF)
#endif
#if defined(SYMGRAD_GCC_VECTORS) || defined(__SSE2__)
SYMGRAD_TRANSPOSE_ENTRY(float, SYMGRAD_TILES_ON)
#else
SYMGRAD_TRANSPOSE_ENTRY(float, SYMGRAD_TILES_OFF)
#endif

/* float arguments and results, double lanes (float32 kernels computing in double) */
static inline void symgrad_transpose_float_double(const float *restrict p, int64_t s, double *restrict l,
                                                  int W) {
    for (int64_t k = 0; k < s; ++k)
        for (int64_t j = 0; j < W; ++j) l[k * W + j] = p[j * s + k];
}

static inline void symgrad_untranspose_double_float(const double *restrict l, int64_t m, int64_t s,
                                                    float *restrict p, int W) {
    for (int64_t j = 0; j < W; ++j)
        for (int64_t k = 0; k < m; ++k) p[j * s + k] = (float)l[k * W + j];
}
#endif

/* Copy r <= w points of s numbers each into a block of w points, repeating the first. */
#define SYMGRAD_PAD(T)                                                                      \
    static inline void symgrad_pad_##T(const T *src, int64_t r, int64_t s, int64_t w,       \
                                       T *dst) {                                            \
        for (int64_t j = 0; j < w; ++j)                                                     \
            for (int64_t k = 0; k < s; ++k) dst[j * s + k] = src[(j < r ? j : 0) * s + k];  \
    }                                                                                       \
    static inline void symgrad_unpad_##T(const T *src, int64_t r, int64_t s, T *dst) {      \
        for (int64_t k = 0; k < r * s; ++k) dst[k] = src[k];                                \
    }
SYMGRAD_PAD(double)
SYMGRAD_PAD(float)

/* A part block of r < W points straight between point order and lane order (the tail of a
 * batch, a single point): symgrad_gather_T_L fills lanes past r with the first point, as
 * symgrad_pad_T does; symgrad_scatter_L_T writes the numbers of the n runs [runs[2i],
 * runs[2i+1]) of each of the r points (a result's computed entries; its fixed ones come
 * from its table). Inline, they compile to code for their call's sizes (one point, a
 * block's W); symgrad_part_gather_T_L and symgrad_part_scatter_L_T are the one generic
 * copy of each, for tails of other sizes. */
#define SYMGRAD_PART(T, L)                                                                  \
    static inline void symgrad_gather_##T##_##L(const T *restrict p, int64_t r, int64_t s,  \
                                                L *restrict l, int W) {                     \
        for (int64_t k = 0; k < s; ++k)                                                     \
            for (int j = 0; j < W; ++j) l[k * W + j] = p[(j < r ? j : 0) * s + k];          \
    }                                                                                       \
    static inline void symgrad_scatter_##L##_##T(const L *restrict l, const int32_t *runs,  \
                                                 int n, int64_t s, T *restrict p, int W,    \
                                                 int64_t r) {                               \
        for (int64_t j = 0; j < r; ++j)                                                     \
            for (int i = 0; i < n; ++i)                                                     \
                for (int64_t k = runs[2 * i]; k < runs[2 * i + 1]; ++k)                     \
                    p[j * s + k] = (T)l[k * W + j];                                         \
    }                                                                                       \
    SYMGRAD_GENERIC void symgrad_part_gather_##T##_##L(const T *restrict p, int64_t r, int64_t s, \
                                                       L *restrict l, int W) {              \
        symgrad_gather_##T##_##L(p, r, s, l, W);                                            \
    }                                                                                       \
    SYMGRAD_GENERIC void symgrad_part_scatter_##L##_##T(const L *restrict l, const int32_t *runs, \
                                                        int n, int64_t s, T *restrict p, int W, \
                                                        int64_t r) {                        \
        symgrad_scatter_##L##_##T(l, runs, n, s, p, W, r);                                  \
    }
SYMGRAD_PART(double, double)
SYMGRAD_PART(float, float)
SYMGRAD_PART(float, double)

/* Vector math: glibc's libmvec evaluates these <math.h> functions on whole SIMD vectors
 * (within 4 ulp of the scalar functions, special values preserved). Declaring them
 * `simd` lets the compiler call the vector versions inside the block loop, as it does
 * under -ffast-math, while every other operation keeps IEEE semantics. The lists, of one
 * and of two arguments (glibc 2.35 added the second pair), are render/target.py VECTOR_FUNCTIONS. */
#define SYMGRAD_VMATH1(X) X(sin) X(cos) X(exp) X(log)
#define SYMGRAD_VMATH2(X) X(pow)
#define SYMGRAD_VMATH1_235(X) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(asinh) \
    X(acosh) X(atanh) X(exp2) X(expm1) X(log2) X(log10) X(log1p) X(cbrt) X(erf) X(erfc)
#define SYMGRAD_VMATH2_235(X) X(atan2) X(hypot)

/* One point in one lane (Options.one_point): each call of a vector maths function goes
 * through symgrad_one_FN_W, which calls the variant a block of W lanes calls, on W copies of
 * its argument, so that the lane computes what the block's lane 0 does (library.py checks
 * in the built library that every such function has one variant). Where a function has no
 * vector variant, a plain call. */
#define SYMGRAD_ONE1_AT(fn, T, W)                                                             \
    static inline T symgrad_one_##fn##_##W(T x) {                                           \
        T v[W], r[W];                                                                       \
        for (int j = 0; j < W; ++j) v[j] = x;                                               \
        SYMGRAD_LANES(W)                                                                    \
        for (int j = 0; j < W; ++j) r[j] = fn(v[j]);                                        \
        return r[0];                                                                        \
    }
#define SYMGRAD_ONE2_AT(fn, T, W)                                                             \
    static inline T symgrad_one_##fn##_##W(T x, T y) {                                      \
        T v[W], w[W], r[W];                                                                 \
        for (int j = 0; j < W; ++j) v[j] = x, w[j] = y;                                     \
        SYMGRAD_LANES(W)                                                                    \
        for (int j = 0; j < W; ++j) r[j] = fn(v[j], w[j]);                                  \
        return r[0];                                                                        \
    }
#define SYMGRAD_PLAIN1_AT(fn, T, W) static inline T symgrad_one_##fn##_##W(T x) { return fn(x); }
#define SYMGRAD_PLAIN2_AT(fn, T, W) static inline T symgrad_one_##fn##_##W(T x, T y) { return fn(x, y); }
/* a function's helpers at each block width: double in 4 and 8 lanes, float in 8 and 16 */
#define SYMGRAD_WIDTHS(AT, fn) AT(fn, double, 4) AT(fn, double, 8) AT(fn##f, float, 8) AT(fn##f, float, 16)
#define SYMGRAD_ONE1(fn) SYMGRAD_WIDTHS(SYMGRAD_ONE1_AT, fn)
#define SYMGRAD_ONE2(fn) SYMGRAD_WIDTHS(SYMGRAD_ONE2_AT, fn)
#define SYMGRAD_PLAIN1(fn) SYMGRAD_WIDTHS(SYMGRAD_PLAIN1_AT, fn)
#define SYMGRAD_PLAIN2(fn) SYMGRAD_WIDTHS(SYMGRAD_PLAIN2_AT, fn)

#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(SYMGRAD_NO_VECTOR_MATH)
#define SYMGRAD_VDECL(fn) \
    __attribute__((simd("notinbranch"))) double fn(double); \
    __attribute__((simd("notinbranch"))) float fn##f(float);
#define SYMGRAD_VDECL2(fn) \
    __attribute__((simd("notinbranch"))) double fn(double, double); \
    __attribute__((simd("notinbranch"))) float fn##f(float, float);
SYMGRAD_VMATH1(SYMGRAD_VDECL) SYMGRAD_VMATH2(SYMGRAD_VDECL2)
SYMGRAD_VMATH1(SYMGRAD_ONE1) SYMGRAD_VMATH2(SYMGRAD_ONE2)
#if __GLIBC_PREREQ(2, 35)
SYMGRAD_VMATH1_235(SYMGRAD_VDECL) SYMGRAD_VMATH2_235(SYMGRAD_VDECL2)
SYMGRAD_VMATH1_235(SYMGRAD_ONE1) SYMGRAD_VMATH2_235(SYMGRAD_ONE2)
#else
SYMGRAD_VMATH1_235(SYMGRAD_PLAIN1) SYMGRAD_VMATH2_235(SYMGRAD_PLAIN2)
#endif
#else
SYMGRAD_VMATH1(SYMGRAD_PLAIN1) SYMGRAD_VMATH2(SYMGRAD_PLAIN2)
SYMGRAD_VMATH1_235(SYMGRAD_PLAIN1) SYMGRAD_VMATH2_235(SYMGRAD_PLAIN2)
#endif

#include "symgrad_math.h"

/* symgrad_math.h's functions inlined into the lane loop that call vector maths there */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(_OPENMP) && !defined(SYMGRAD_NO_VECTOR_MATH)
SYMGRAD_ONE1(symgrad_sech2)
SYMGRAD_ONE2(symgrad_logaddexp)
SYMGRAD_ONE2(symgrad_logaddexp2)
#else
SYMGRAD_PLAIN1(symgrad_sech2)
SYMGRAD_PLAIN2(symgrad_logaddexp)
SYMGRAD_PLAIN2(symgrad_logaddexp2)
#endif

#endif

/*
 * crc32c.c - CRC-32C at memory speed: the CPU's CRC instruction (SSE4.2 on
 * x86-64, the CRC extension on ARMv8) on three independent streams at once,
 * or slice-by-8 in software.
 *
 * Why three streams: the instruction has a latency of about three cycles but
 * can start one per cycle, so a single dependent chain (each step needs the
 * previous CRC) runs at a third of what the unit can do. Splitting a buffer
 * into three consecutive blocks, computing their CRCs side by side and
 * joining them with a "shift by N zero bytes" operator (a table lookup per
 * byte of the CRC, tables built once for the two block sizes used) keeps the
 * unit busy. This is the scheme of Intel's paper and of Mark Adler's
 * crc32c.c, which the fastest portable implementations still use.
 *
 * The choice of code is made once, on first use; the result is identical
 * either way (the unit tests compare each against a bitwise reference).
 */
#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

#include "util/hot_kernel.h"

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7) /* the kernel's value; older libc headers lack the name */
#endif
#endif

#define CRC32C_POLY_REFLECTED 0x82F63B78u
#define CRC32C_GF2_DIM        32 /* a CRC-32 state is a vector over GF(2) of this many bits */

/*
 * Block sizes of the three-stream loops: long blocks for the bulk (the
 * combination's cost, two table shifts, is then noise), short ones for what
 * is left, so that a 4 KiB page still runs on three streams.
 */
#define CRC32C_LONG  8192
#define CRC32C_SHORT 256
#define CRC32C_WORD  8

/* Multiplying a CRC by x^(8 n) mod P, one table per byte of the CRC. */
typedef uint32_t crc32c_shift_table[4][256];

static uint32_t crc32c_sw_table[8][256];
static crc32c_shift_table crc32c_long_shift, crc32c_short_shift;
static uint32_t (*crc32c_impl)(uint32_t, const unsigned char *, size_t);
static const char *crc32c_impl_name = "software";
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static HOT_KERNEL uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len > 0 && ((uintptr_t)p & (CRC32C_WORD - 1)) != 0) {
        crc = crc32c_sw_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        len--;
    }
    while (len >= CRC32C_WORD) {
        uint64_t word;
        memcpy(&word, p, CRC32C_WORD);
        word ^= crc;
        crc = crc32c_sw_table[7][word & 0xFF] ^ crc32c_sw_table[6][(word >> 8) & 0xFF] ^
              crc32c_sw_table[5][(word >> 16) & 0xFF] ^ crc32c_sw_table[4][(word >> 24) & 0xFF] ^
              crc32c_sw_table[3][(word >> 32) & 0xFF] ^ crc32c_sw_table[2][(word >> 40) & 0xFF] ^
              crc32c_sw_table[1][(word >> 48) & 0xFF] ^ crc32c_sw_table[0][word >> 56];
        p += CRC32C_WORD;
        len -= CRC32C_WORD;
    }
    while (len-- > 0)
        crc = crc32c_sw_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

static inline HOT_KERNEL uint32_t crc32c_shift(const crc32c_shift_table t, uint32_t crc)
{
    return t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF] ^ t[3][crc >> 24];
}

/*
 * The three-stream loop, written once for both instruction sets: CRC_U64 and
 * CRC_U8 are the instruction on 8 bytes and on one byte. Streams 1 and 2
 * start from 0, so that joining is shift(crc0) ^ crc1, then again with crc2.
 */
#define CRC32C_THREE_STREAMS(CRC_U64, CRC_U8)                                                      \
    do {                                                                                           \
        while (len > 0 && ((uintptr_t)p & (CRC32C_WORD - 1)) != 0) {                               \
            crc = CRC_U8(crc, *p++);                                                               \
            len--;                                                                                 \
        }                                                                                          \
        CRC32C_BLOCKS(CRC_U64, CRC32C_LONG, crc32c_long_shift);                                    \
        CRC32C_BLOCKS(CRC_U64, CRC32C_SHORT, crc32c_short_shift);                                  \
        while (len >= CRC32C_WORD) {                                                               \
            uint64_t w;                                                                            \
            memcpy(&w, p, CRC32C_WORD);                                                            \
            crc = (uint32_t)CRC_U64(crc, w);                                                       \
            p += CRC32C_WORD;                                                                      \
            len -= CRC32C_WORD;                                                                    \
        }                                                                                          \
        while (len-- > 0)                                                                          \
            crc = CRC_U8(crc, *p++);                                                               \
    } while (0)

#define CRC32C_BLOCKS(CRC_U64, BLOCK, SHIFT)                                                       \
    while (len >= 3 * (BLOCK)) {                                                                   \
        uint64_t c0 = crc, c1 = 0, c2 = 0;                                                         \
        for (const unsigned char *end = p + (BLOCK); p < end; p += CRC32C_WORD) {                  \
            uint64_t w0, w1, w2;                                                                   \
            memcpy(&w0, p, CRC32C_WORD);                                                           \
            memcpy(&w1, p + (BLOCK), CRC32C_WORD);                                                 \
            memcpy(&w2, p + 2 * (BLOCK), CRC32C_WORD);                                             \
            c0 = CRC_U64((uint32_t)c0, w0);                                                        \
            c1 = CRC_U64((uint32_t)c1, w1);                                                        \
            c2 = CRC_U64((uint32_t)c2, w2);                                                        \
        }                                                                                          \
        crc = crc32c_shift(SHIFT, (uint32_t)c0) ^ (uint32_t)c1;                                    \
        crc = crc32c_shift(SHIFT, crc) ^ (uint32_t)c2;                                             \
        p += 2 * (BLOCK);                                                                          \
        len -= 3 * (BLOCK);                                                                        \
    }

#if defined(__x86_64__)
/*
 * The compiler's builtins, not <nmmintrin.h>: its wrappers are functions,
 * which gcc does not inline into a HOT_KERNEL (no coverage counters).
 */
__attribute__((target("sse4.2"))) static HOT_KERNEL uint32_t crc32c_sse42(uint32_t crc,
                                                                          const unsigned char *p,
                                                                          size_t len)
{
#define CRC32C_X86_U64(c, w) __builtin_ia32_crc32di((c), (w))
#define CRC32C_X86_U8(c, b)  __builtin_ia32_crc32qi((c), (b))
    CRC32C_THREE_STREAMS(CRC32C_X86_U64, CRC32C_X86_U8);
    return crc;
}
#endif

#if defined(__aarch64__)
/* (instrumented: the ACLE intrinsics are functions that a HOT_KERNEL cannot inline) */
#pragma GCC push_options
#pragma GCC target("+crc")
#include <arm_acle.h>

static uint32_t crc32c_armv8(uint32_t crc, const unsigned char *p, size_t len)
{
#define CRC32C_ARM_U64(c, w) __crc32cd((c), (w))
#define CRC32C_ARM_U8(c, b)  __crc32cb((c), (b))
    CRC32C_THREE_STREAMS(CRC32C_ARM_U64, CRC32C_ARM_U8);
    return crc;
}
#pragma GCC pop_options
#endif

/* GF(2) matrix (one column per bit of the input) times a vector. */
static uint32_t crc32c_gf2_times(const uint32_t *mat, uint32_t vec)
{
    uint32_t sum = 0;

    for (; vec != 0; vec >>= 1, mat++)
        if (vec & 1)
            sum ^= *mat;
    return sum;
}

static void crc32c_gf2_square(uint32_t *square, const uint32_t *mat)
{
    for (int n = 0; n < CRC32C_GF2_DIM; n++)
        square[n] = crc32c_gf2_times(mat, mat[n]);
}

/* The operator that appends `len` zero bytes to a CRC state: a 32x32 GF(2) matrix. */
static void crc32c_zeros_operator(uint32_t *op, uint64_t len)
{
    uint32_t sq[CRC32C_GF2_DIM], tmp[CRC32C_GF2_DIM];
    uint32_t row = 1;

    /* one zero bit: shift right, reduce by the polynomial when a one falls out */
    sq[0] = CRC32C_POLY_REFLECTED;
    for (int n = 1; n < CRC32C_GF2_DIM; n++, row <<= 1)
        sq[n] = row;
    crc32c_gf2_square(tmp, sq);  /* two bits */
    crc32c_gf2_square(sq, tmp);  /* four bits */
    crc32c_gf2_square(tmp, sq);  /* one byte */
    memcpy(sq, tmp, sizeof(sq)); /* sq: x^(8 * 2^k), k = 0, 1, ... */
    for (int n = 0; n < CRC32C_GF2_DIM; n++)
        op[n] = 1u << n; /* identity */
    while (len > 0) {
        if (len & 1) {
            for (int n = 0; n < CRC32C_GF2_DIM; n++)
                tmp[n] = crc32c_gf2_times(sq, op[n]);
            memcpy(op, tmp, sizeof(tmp));
        }
        len >>= 1;
        if (len > 0) {
            crc32c_gf2_square(tmp, sq);
            memcpy(sq, tmp, sizeof(sq));
        }
    }
}

/*
 * The operator is linear: the entry of a byte is the XOR of the entries of its bits. Eight
 * products a table instead of 256 (every process builds these: 0.25 ms saved a start).
 */
static void crc32c_build_shift(crc32c_shift_table t, uint64_t len)
{
    uint32_t op[CRC32C_GF2_DIM];

    crc32c_zeros_operator(op, len);
    for (int k = 0; k < 4; k++) {
        t[k][0] = 0;
        for (uint32_t bit = 1; bit < 256; bit <<= 1) {
            t[k][bit] = crc32c_gf2_times(op, bit << (8 * k));
            for (uint32_t b = bit + 1; b < bit << 1; b++)
                t[k][b] = t[k][bit] ^ t[k][b - bit];
        }
    }
}

static void crc32c_init_once(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        crc32c_sw_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc32c_sw_table[t][i] = (crc32c_sw_table[t - 1][i] >> 8) ^
                                    crc32c_sw_table[0][crc32c_sw_table[t - 1][i] & 0xFF];
    crc32c_build_shift(crc32c_long_shift, CRC32C_LONG);
    crc32c_build_shift(crc32c_short_shift, CRC32C_SHORT);
    crc32c_impl = crc32c_sw;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc32c_impl = crc32c_sse42;
        crc32c_impl_name = "sse4.2";
    }
#elif defined(__aarch64__) && defined(__linux__)
    if (getauxval(AT_HWCAP) & HWCAP_CRC32) {
        crc32c_impl = crc32c_armv8;
        crc32c_impl_name = "armv8-crc";
    }
#endif
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init_once);
    hot_kernel_check(data, len);
    return crc32c_impl(crc, data, len);
}

uint32_t crc32c(const void *data, size_t len)
{
    return crc32c_final(crc32c_update(CRC32C_INIT, data, len));
}

uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
    uint32_t op[CRC32C_GF2_DIM];

    /* the initial and final inversions cancel: only crc1's shift past len2 bytes remains */
    crc32c_zeros_operator(op, len2);
    return crc32c_gf2_times(op, crc1) ^ crc2;
}

const char *crc32c_implementation(void)
{
    pthread_once(&crc32c_once, crc32c_init_once);
    return crc32c_impl_name;
}

/* For the unit tests and the benchmark: the software path regardless of the CPU. */
uint32_t crc32c_software(const void *data, size_t len);
uint32_t crc32c_software(const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init_once);
    return crc32c_final(crc32c_sw(CRC32C_INIT, data, len));
}

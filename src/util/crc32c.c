/*
 * crc32c.c - CRC-32C with the SSE4.2 instruction, or slice-by-8 in software.
 *
 * The choice is made once, on first use; the result is identical either way
 * (the unit tests compare both against the RFC 3720 check values).
 */
#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

#define CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t crc_table[8][256];
static uint32_t (*crc_impl)(uint32_t, const unsigned char *, size_t);
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        len--;
    }
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= crc;
        crc = crc_table[7][word & 0xFF] ^ crc_table[6][(word >> 8) & 0xFF] ^
              crc_table[5][(word >> 16) & 0xFF] ^ crc_table[4][(word >> 24) & 0xFF] ^
              crc_table[3][(word >> 32) & 0xFF] ^ crc_table[2][(word >> 40) & 0xFF] ^
              crc_table[1][(word >> 48) & 0xFF] ^ crc_table[0][word >> 56];
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const unsigned char *p,
                                                               size_t len)
{
    uint64_t crc64 = crc;

    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc64 = _mm_crc32_u8((uint32_t)crc64, *p++);
        len--;
    }
    while (len >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc64 = _mm_crc32_u64(crc64, word);
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        crc64 = _mm_crc32_u8((uint32_t)crc64, *p++);
    return (uint32_t)crc64;
}
#endif

static void crc32c_init_once(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
    crc_impl = crc32c_sw;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        crc_impl = crc32c_sse42;
#endif
}

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc_once, crc32c_init_once);
    return crc_impl(crc, data, len);
}

uint32_t crc32c(const void *data, size_t len)
{
    return crc32c_final(crc32c_update(CRC32C_INIT, data, len));
}

/* For the unit tests: the software path regardless of the CPU. */
uint32_t crc32c_software(const void *data, size_t len);
uint32_t crc32c_software(const void *data, size_t len)
{
    pthread_once(&crc_once, crc32c_init_once);
    return crc32c_final(crc32c_sw(CRC32C_INIT, data, len));
}

/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum PostgreSQL's backup_manifest
 * uses by default. The CPU's instruction on three streams at once when it has
 * one (SSE4.2 on x86-64, the CRC extension on ARMv8), else a slice-by-8 table.
 */
#ifndef PGD_CRC32C_H
#define PGD_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define CRC32C_INIT 0xFFFFFFFFu

/* Running form: crc = crc32c_update(CRC32C_INIT, ...)...; value = crc32c_final(crc). */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);

static inline uint32_t crc32c_final(uint32_t crc)
{
    return crc ^ 0xFFFFFFFFu;
}

uint32_t crc32c(const void *data, size_t len);

/*
 * The CRC-32C of A followed by B, from crc32c(A), crc32c(B) and B's length:
 * what lets parts of one stream be checksummed apart and joined.
 */
uint32_t crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* Which code computes it on this CPU: "sse4.2", "armv8-crc" or "software". */
const char *crc32c_implementation(void);

#endif

/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum PostgreSQL's backup_manifest
 * uses by default. Hardware instruction when the CPU has it (SSE4.2), else a
 * slice-by-8 table.
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

#endif

/*
 * wal_name.c - WAL file names and segment numbers (see wal_name.h).
 */
#include "pg/wal_name.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define WAL_LOG_BYTES      (UINT64_C(1) << 32) /* a "log": the middle part of a segment name */
#define WAL_BACKUP_OFF_LEN 8                   /* the offset in a backup history file's name */
#define WAL_PARTIAL_EXT    ".partial"
#define WAL_HISTORY_EXT    ".history"
#define WAL_BACKUP_EXT     ".backup"

/* n upper-case hex digits at s (PostgreSQL's IsXLogFileName: "0123456789ABCDEF" only). */
static bool wal_name_is_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'F')))
            return false;
    return true;
}

/* 8 upper-case hex digits at s, already checked. */
static uint32_t wal_name_hex32(const char *s)
{
    uint32_t v = 0;

    for (int i = 0; i < 8; i++)
        v = v << 4 | (uint32_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'A' + 10);
    return v;
}

wal_file_kind wal_name_kind(const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;
    const char *ext = name != NULL && len > WAL_FILE_NAME_LEN ? name + WAL_FILE_NAME_LEN : "";

    if (len == WAL_FILE_NAME_LEN && wal_name_is_hex(name, WAL_FILE_NAME_LEN))
        return WAL_FILE_SEGMENT;
    if (strcmp(ext, WAL_PARTIAL_EXT) == 0 && wal_name_is_hex(name, WAL_FILE_NAME_LEN))
        return WAL_FILE_PARTIAL;
    if (len == WAL_HISTORY_NAME_LEN && wal_name_is_hex(name, WAL_TLI_NAME_LEN) &&
        strcmp(name + WAL_TLI_NAME_LEN, WAL_HISTORY_EXT) == 0)
        return WAL_FILE_HISTORY;
    if (ext[0] == '.' && strlen(ext) == 1 + WAL_BACKUP_OFF_LEN + strlen(WAL_BACKUP_EXT) &&
        wal_name_is_hex(name, WAL_FILE_NAME_LEN) && wal_name_is_hex(ext + 1, WAL_BACKUP_OFF_LEN) &&
        strcmp(ext + 1 + WAL_BACKUP_OFF_LEN, WAL_BACKUP_EXT) == 0)
        return WAL_FILE_BACKUP;
    return WAL_FILE_UNKNOWN;
}

bool wal_name_is_wal_file(const char *name)
{
    return wal_name_kind(name) != WAL_FILE_UNKNOWN;
}

bool wal_name_starts_with_segment(const char *name)
{
    return name != NULL && strnlen(name, WAL_FILE_NAME_LEN) == WAL_FILE_NAME_LEN &&
           wal_name_is_hex(name, WAL_FILE_NAME_LEN);
}

bool wal_name_seg_size_valid(uint64_t seg_size)
{
    return seg_size >= WAL_SEG_SIZE_MIN && seg_size <= WAL_SEG_SIZE_MAX &&
           (seg_size & (seg_size - 1)) == 0;
}

uint64_t wal_name_segs_per_log(uint64_t seg_size)
{
    return WAL_LOG_BYTES / seg_size;
}

uint64_t wal_name_segno(pg_lsn lsn, uint64_t seg_size, bool prev)
{
    return (prev && lsn > 0 ? lsn - 1 : lsn) / seg_size;
}

bool wal_name_from_segno(uint32_t tli, uint64_t segno, uint64_t seg_size,
                         char out[WAL_FILE_NAME_LEN + 1])
{
    uint64_t per_log;

    if (!wal_name_seg_size_valid(seg_size))
        return false;
    per_log = wal_name_segs_per_log(seg_size);
    if (segno / per_log > UINT32_MAX)
        return false;
    snprintf(out, WAL_FILE_NAME_LEN + 1, "%08" PRIX32 "%08" PRIX32 "%08" PRIX32, tli,
             (uint32_t)(segno / per_log), (uint32_t)(segno % per_log));
    return true;
}

void wal_name_of_lsn(uint32_t tli, pg_lsn lsn, uint64_t seg_size, bool prev,
                     char out[WAL_FILE_NAME_LEN + 1])
{
    /* an LSN's segment is always nameable: its log number is the LSN's upper 32 bits */
    if (!wal_name_from_segno(tli, wal_name_segno(lsn, seg_size, prev), seg_size, out))
        out[0] = '\0';
}

bool wal_name_parse(const char *name, uint64_t seg_size, uint32_t *tli, uint64_t *segno)
{
    uint32_t t, log, seg;

    if (wal_name_kind(name) != WAL_FILE_SEGMENT || !wal_name_seg_size_valid(seg_size) ||
        !wal_name_parts(name, &t, &log, &seg) || seg >= wal_name_segs_per_log(seg_size))
        return false;
    *tli = t;
    *segno = (uint64_t)log * wal_name_segs_per_log(seg_size) + seg;
    return true;
}

bool wal_name_timeline_hex(const char *text, uint32_t *tli)
{
    if (text == NULL || strnlen(text, WAL_TLI_NAME_LEN + 1) != WAL_TLI_NAME_LEN ||
        !wal_name_is_hex(text, WAL_TLI_NAME_LEN))
        return false;
    if (tli != NULL)
        *tli = wal_name_hex32(text);
    return true;
}

void wal_name_timeline_text(uint32_t tli, char out[WAL_TLI_NAME_LEN + 1])
{
    snprintf(out, WAL_TLI_NAME_LEN + 1, "%08" PRIX32, tli);
}

void wal_name_history(uint32_t tli, char out[WAL_HISTORY_NAME_LEN + 1])
{
    snprintf(out, WAL_HISTORY_NAME_LEN + 1, "%08" PRIX32 WAL_HISTORY_EXT, tli);
}

bool wal_name_timeline_parse(const char *text, uint32_t *tli)
{
    uint64_t v = 0;
    size_t i = 0;

    /* no sign, no leading zero, no space: what PostgreSQL prints for a TimeLineID */
    if (text == NULL || text[0] < '1' || text[0] > '9')
        return false;
    for (; text[i] >= '0' && text[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(text[i] - '0');
        if (v > UINT32_MAX)
            return false;
    }
    if (text[i] != '\0')
        return false;
    *tli = (uint32_t)v;
    return true;
}

bool wal_name_parts(const char *name, uint32_t *tli, uint32_t *log, uint32_t *seg)
{
    wal_file_kind kind = wal_name_kind(name);

    if (kind == WAL_FILE_UNKNOWN)
        return false;
    *tli = wal_name_hex32(name);
    *log = kind == WAL_FILE_HISTORY ? 0 : wal_name_hex32(name + WAL_TLI_NAME_LEN);
    *seg = kind == WAL_FILE_HISTORY ? 0 : wal_name_hex32(name + 2 * WAL_TLI_NAME_LEN);
    return true;
}

bool wal_name_timeline(const char *name, uint32_t *tli)
{
    if (wal_name_kind(name) == WAL_FILE_UNKNOWN)
        return false;
    *tli = wal_name_hex32(name);
    return true;
}

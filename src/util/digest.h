/*
 * digest.h - SHA-256, HMAC-SHA-256 and MD5 from libcrypto, opened on first
 * use (see util/shared_lib.h for why libraries are not linked).
 *
 * Linked at build time, libcrypto's start-up costs every run of pgdirect
 * about 1.2 ms of CPU (measured with perf stat: an empty program linked with
 * it, 1.6 ms; without, 0.4 ms), which was 40 % of what a start of pgdirect
 * cost. Only S3 requests (SigV4, Content-MD5) and a backup's
 * backup_manifest use it; a wal-fetch served from the spool or a local
 * repository does not.
 *
 * digest_load reports a library that cannot be opened, or that opens but
 * makes no SHA-256 (asked once, of "abc"); http_libs_load, the manifest's build
 * and the commands that write one (backup, a delta restore) call it first,
 * so either fails them before any work. A digest
 * asked for without it loads the library itself. Each digest is false (and
 * its output all zeros) when libcrypto could not make it: not loaded, or
 * its digest refused (an OpenSSL configuration whose providers lack it).
 */
#ifndef PGD_DIGEST_H
#define PGD_DIGEST_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define DIGEST_SHA256_LEN 32
#define DIGEST_MD5_LEN    16

bool digest_load(pgd_error *err);

bool digest_sha256(const void *data, size_t len, unsigned char out[DIGEST_SHA256_LEN]);
bool digest_hmac_sha256(const void *key, size_t key_len, const void *msg, size_t msg_len,
                        unsigned char out[DIGEST_SHA256_LEN]);
bool digest_md5(const void *data, size_t len, unsigned char out[DIGEST_MD5_LEN]);

#endif

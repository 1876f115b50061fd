/*
 * verify_wal.h - the WAL part of verify (verify.h): a backup's WAL in the
 * repository, from its start segment to its stop segment (without which
 * the backup cannot be restored at all), and on from there while each
 * segment is there and intact (how far a point-in-time restore can go).
 */
#ifndef PGD_VERIFY_WAL_H
#define PGD_VERIFY_WAL_H

#include <stdbool.h>

#include "verify/verify_result.h"
#include "util/error.h"

/*
 * Check req->bi's WAL and record what was found in r: problems (a segment
 * missing, damaged or of another cluster), the segment size, the
 * segments a restore can reach, and a damaged segment that ends them
 * (req->memo, when given, spares reading a segment twice in one run).
 * False only when the check itself could not be made (verify.h: what
 * fails the call).
 */
bool verify_wal(const verify_request *req, verify_result *r, pgd_error *err);

#endif

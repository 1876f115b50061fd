/*
 * filter_crc.h - a file filter that counts the bytes passing through and
 * computes their CRC-32C (the manifest's size and checksum of a file).
 * It only looks: the bytes go on unchanged.
 */
#ifndef PGD_FILTER_CRC_H
#define PGD_FILTER_CRC_H

#include "backup/file_filter.h"

file_filter *filter_crc_new(file_filter *next, pgd_error *err);

#endif

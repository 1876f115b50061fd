/*
 * filter_crc.h - a file filter that counts the bytes passing through and
 * computes their CRC-32C (the manifest's size and checksum of a file).
 * It only looks: the bytes go on unchanged. It sits right before the tar
 * filter, so what it records is the tar entry: a file that delivers fewer
 * bytes than begin announced is counted with the zeros that complete its
 * entry (filter_tar.h).
 */
#ifndef PGD_FILTER_CRC_H
#define PGD_FILTER_CRC_H

#include "backup/file_filter.h"

file_filter *filter_crc_new(file_filter *next);

#endif

#!/usr/bin/env python3
"""crypt_format_vectors.py - the known-answer objects of test_crypt_format.c,
computed with Python's cryptography from the description in
src/storage/crypt/format.h, independently of pgdirect's code.

    python3 tests/unit/crypt_format_vectors.py

prints the first object in hex and the SHA-256 of the second.
"""
import hashlib
import struct

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CHUNK = 65536
MAGIC = b"PGDCRYP2"
INFO = b"pgdirect object key PGDCRYP2"
DATA_KEY = bytes(range(32))
SALT = bytes(range(1, 33))


def encrypt(kid, name, plain):
    hdr = MAGIC + struct.pack(">I", kid) + SALT
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=SALT, info=INFO).derive(DATA_KEY)
    chunks = [plain[i:i + CHUNK] for i in range(0, len(plain), CHUNK)]
    if not chunks or len(chunks[-1]) == CHUNK:
        chunks.append(b"")
    out = hdr
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        aad = hdr + struct.pack(">I", len(name)) + name + struct.pack(">Q", i) + bytes([last])
        out += AESGCM(key).encrypt(struct.pack(">QI", 0, i), c, aad)
    return out


def main():
    small = encrypt(1, b"wal/0000000100000000/000000010000000000000001.lz4",
                    b"the quick brown fox jumps over the lazy dog")
    print("small", len(small), small.hex())
    big = bytes((i * 7 + 3) & 0xFF for i in range(2 * CHUNK + 5))
    obj = encrypt(7, b"backups/20261206T061000F/part_0001.tar.lz4", big)
    print("big", len(obj), hashlib.sha256(obj).hexdigest())


if __name__ == "__main__":
    main()

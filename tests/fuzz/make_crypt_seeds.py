#!/usr/bin/env python3
"""make_crypt_seeds.py - seeds of fuzz_crypt (corpus/crypt): encrypted objects
in the format of src/storage/crypt/format.h, and a keyring of
src/storage/crypt/keyring.h, for the keys fuzz_crypt.c uses; written with
Python's cryptography, independently of pgdirect's code.

    python3 tests/fuzz/make_crypt_seeds.py tests/fuzz/corpus/crypt
"""
import hashlib
import hmac
import os
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

CHUNK = 65536
NAME = b"wal/00000001/000000010000000000000001.lz4"


def data_key(kid):
    return bytes(range(32)) if kid == 1 else bytes((~i) & 0xFF for i in range(32))


def encrypt(kid, plain, salt):
    hdr = b"PGDCRYP2" + struct.pack(">I", kid) + salt
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt,
               info=b"pgdirect object key PGDCRYP2").derive(data_key(kid))
    out = hdr
    chunks = [plain[i:i + CHUNK] for i in range(0, len(plain), CHUNK)]
    if not chunks or len(chunks[-1]) == CHUNK:
        chunks.append(b"")
    for i, c in enumerate(chunks):
        last = i == len(chunks) - 1
        aad = hdr + struct.pack(">I", len(NAME)) + NAME + struct.pack(">Q", i) + bytes([last])
        out += AESGCM(key).encrypt(struct.pack(">QI", 0, i), c, aad)
    return out


def keyring(version=1):
    salt = bytes(range(16))
    master = bytes(0x80 + i for i in range(32))
    kek = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt,
               info=b"pgdirect master key").derive(master)
    lines = [b"pgdirect-keyring %d" % version, b"kdf hkdf-sha256 " + salt.hex().encode()]
    for kid in (1, 7):
        nonce = bytes([kid] * 12)
        w = AESGCM(kek).encrypt(nonce, data_key(kid), b"pgdirect data key %d" % kid)
        lines.append(b"key %d %s %s" % (kid, nonce.hex().encode(), w.hex().encode()))
    lines.append(b"active 7")
    if version == 1:
        return b"\n".join(lines) + b"\n"
    # version 2: the check value under the KEK, then the SHA-256 of every byte before the sum
    check = hmac.new(kek, b"pgdirect keyring check", hashlib.sha256).digest()
    lines.append(b"check " + check.hex().encode())
    text = b"\n".join(lines) + b"\n"
    return text + b"sum " + hashlib.sha256(text).hexdigest().encode() + b"\n"


def main(out):
    os.makedirs(out, exist_ok=True)
    seeds = {
        "empty": encrypt(1, b"", bytes(32)),
        "short": encrypt(1, b"the quick brown fox", bytes(range(32))),
        "two_chunks": encrypt(7, bytes(i % 251 for i in range(CHUNK + 100)), bytes([9] * 32)),
        "exact_chunk": encrypt(1, bytes(CHUNK), bytes([3] * 32)),
    }
    for name, body in seeds.items():
        with open(os.path.join(out, "object_" + name), "wb") as f:
            f.write(b"\x00" + body)
    with open(os.path.join(out, "keyring"), "wb") as f:
        f.write(b"\x01" + keyring())
    with open(os.path.join(out, "keyring_v2"), "wb") as f:
        f.write(b"\x01" + keyring(2))


if __name__ == "__main__":
    main(sys.argv[1])

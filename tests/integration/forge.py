"""forge.py - what the tests that craft hostile backups share, for their
embedded Python (run through forge_python in lib.sh, which puts this
directory on the module path)."""


def crc32c(data):
    """CRC-32C (Castagnoli) of data, as pgdirect records it in a manifest."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF

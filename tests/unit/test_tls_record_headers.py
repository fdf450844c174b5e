"""Reading TLS record headers out of a ciphertext stream (store/tlsrecords.py), without a server."""

from __future__ import annotations

from shotbench.store import tlsrecords


def test_the_record_headers_are_read_from_a_stream_cut_anywhere() -> None:
    stream = bytes([23, 3, 3, 0, 4]) + b"abcd" + bytes([23, 3, 3, 0x10, 0x11]) + b"x" * 0x1011
    assert tlsrecords.record_lengths(stream) == [(23, 9), (23, 5 + 0x1011)]
    for cut in range(len(stream)):  # a record counts once it is whole, and never before
        assert tlsrecords.record_lengths(stream[:cut]) == ([(23, 9)] if cut >= 9 else [])


def test_small_means_under_half_of_what_tls_allows() -> None:
    def rec(n: int) -> tlsrecords.TlsRecords:
        return tlsrecords.TlsRecords("TLSv1.3", 100, n, n, 1 << 20)

    assert rec(4118).small and not rec(16406).small and not rec(8192).small

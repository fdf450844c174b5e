"""Tools configured to make `shotbench stage`'s upload check, or to drop a check they make by default.

Each tool first runs with its own defaults (the other modules); these variants run it once more
so a row can say what the check costs apart from what the tool costs: awscrt and boto3 computing
a whole-object CRC64NVME that the server verifies (stage's check), and obstore without the
SHA-256 of the body it computes for signing (it offers no CRC64NVME, so `unsigned_payload` is
the nearest it comes). What each makes is in shotbench.transfer.checks.
"""

from __future__ import annotations

from typing import Any

from shotbench.store.clients import obstore_store
from shotbench.transfer.programs.boto import Boto3TransferManager
from shotbench.transfer.programs.crt_client import AwsCrt
from shotbench.transfer.programs.fs import ObstoreSync
from shotbench.transfer.programs.tool import Outcome, _timed_pool


class AwsCrtCrc64(AwsCrt):
    """awscrt making stage's checks both ways: on upload, S3ChecksumConfig(CRC64NVME) (aws-c-s3
    computes the checksum while it sends, a trailer, and the server verifies it); on download,
    `validate_response` (aws-c-s3 checks the bytes against the whole-object checksum the server
    stores, asking for it with a HeadObject where the GET does not carry it). The downloads it
    says it validated are counted (`checksum-checked`)."""

    name = "awscrt-crc64nvme"
    describe = {
        "upload": "S3Client.make_request(PUT_OBJECT, send_filepath=f, checksum_config=S3ChecksumConfig(CRC64NVME, "
        "TRAILER)) for all files: CRC64NVME computed while sending, verified by the server",
        "download": "S3Client.make_request(GET_OBJECT, recv_filepath=f, checksum_config=S3ChecksumConfig("
        "validate_response=True)) for all files: the bytes checked against the object's stored checksum",
    }

    def _checksum(self) -> Any:
        from awscrt.s3 import S3ChecksumAlgorithm, S3ChecksumConfig, S3ChecksumLocation

        return S3ChecksumConfig(algorithm=S3ChecksumAlgorithm.CRC64NVME, location=S3ChecksumLocation.TRAILER)

    def _validation(self) -> Any:
        from awscrt.s3 import S3ChecksumConfig, S3ChecksumValidationMode

        return S3ChecksumConfig(validate_response=True, response_validation_mode=S3ChecksumValidationMode.FULL_OBJECT)


class Boto3Crc64(Boto3TransferManager):
    """The boto3 TransferManager asked for CRC64NVME instead of its default CRC32 (botocore computes
    it, with awscrt's implementation); uploads only."""

    name = "boto3-crc64nvme"
    directions = ("upload",)
    describe = {
        "upload": "TransferManager(max_concurrency=N).upload(all files, extra_args={'ChecksumAlgorithm': 'CRC64NVME'})",
    }

    def upload(self, files, src, target, cfg, concurrency):
        extra = {"ChecksumAlgorithm": "CRC64NVME"}
        with self._manager(cfg, concurrency) as tm:
            return self._all(
                lambda: [
                    (f.name, tm.upload(str(f.path), target.bucket, target.key(f.name), extra_args=extra)) for f in files
                ]
            )


class ObstoreUnsignedPayload(ObstoreSync):
    """obstore with `unsigned_payload=True`: no SHA-256 of each body for the signature, so no
    check at all; uploads only."""

    name = "obstore-unsigned"
    directions = ("upload",)
    describe = {"upload": "N threads: obstore.put(S3Store(unsigned_payload=True), key, Path(f))"}

    def upload(self, files, src, target, cfg, concurrency):
        import obstore

        store = obstore_store(cfg, target.bucket, config={"unsigned_payload": True})
        return Outcome(_timed_pool(files, lambda f: obstore.put(store, target.key(f.name), f.path), concurrency))

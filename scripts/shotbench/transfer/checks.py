"""What each transfer tool checks when it uploads, and where that fact comes from.

Tools differ in what they compute over the bytes they send, and that work is part of their time:
SHA-256 body signing costs the fastest engine 11–15 % on small files, a CRC almost nothing. So
the transfer table names each tool's check beside its time, and `stage` (which makes a whole-
object CRC64NVME check) is compared both with the fastest tool and with the fastest making the
same check. Each entry was read from the pinned package's source (uv.lock) or the installed
tool's version, as its `source` says; the embedded server is plain HTTP on loopback unless a
run asks for TLS, which matters to botocore (it signs the body's SHA-256 over plain HTTP).
"""

from __future__ import annotations

NONE = "none"
MD5 = "MD5"
SHA256_SIGNING = "SHA-256 body signing"
CRC32_COMPOSITE = "CRC32 composite"
CRC64_WHOLE = "CRC64NVME whole-object"

STAGE_CHECK = CRC64_WHOLE
"""What `shotbench stage` makes: CRC64NVME of the whole file, computed by the client while it sends
the bytes and verified by the server, the stored value compared with the file's (shotbench.store.staging)."""

UPLOAD_CHECK: dict[str, str] = {
    "shotbench": CRC64_WHOLE,
    "awscrt": NONE,
    "awscrt-sha256": "SHA-256 (composite for multipart)",
    "awscrt-crc64nvme": CRC64_WHOLE,
    "boto3-loop": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "boto3-transfer-manager": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "boto3-crc64nvme": f"{CRC64_WHOLE} + {SHA256_SIGNING} (http)",
    "boto3-tuned": f"{SHA256_SIGNING} (http)",
    "aws-s3-sync": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "aws-s3-cp": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "s5cmd": f"{MD5} + {SHA256_SIGNING}",
    "s3fs": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "s3fs-async": f"{CRC32_COMPOSITE} + {SHA256_SIGNING} (http)",
    "obstore": SHA256_SIGNING,
    "obstore-async": SHA256_SIGNING,
    "obstore-unsigned": NONE,
}
"""The check each tool makes on upload, with its defaults (or the configuration its name says)."""

SOURCE: dict[str, str] = {
    "shotbench": "scripts/shotbench/store/staging.py (S3ChecksumConfig(CRC64NVME, TRAILER) on every PUT and "
    "part; the stored value compared with the file's own CRC64NVME)",
    "awscrt": "awscrt 0.38.1 awscrt/s3.py: make_request(checksum_config=None) sends no checksum; "
    "create_default_s3_signing_config signs AwsSignedBodyValue.UNSIGNED_PAYLOAD",
    "awscrt-sha256": "S3ChecksumConfig(SHA256, TRAILER) in shotbench.transfer.programs.crt_client",
    "awscrt-crc64nvme": "S3ChecksumConfig(CRC64NVME, TRAILER) in shotbench.transfer.programs.checked; "
    "aws-c-s3 computes it while sending; S3 keeps CRC64NVME as FULL_OBJECT only",
    "boto3-loop": "botocore 1.43.117 httpchecksum.py DEFAULT_CHECKSUM_ALGORITHM = 'CRC32' with "
    "request_checksum_calculation when_supported; s3transfer 0.19.3 utils.set_default_checksum_algorithm "
    "(per part: a composite); botocore auth.py S3SigV4Auth signs the payload when the URL is not https",
    "boto3-transfer-manager": "as boto3-loop (same botocore and s3transfer defaults)",
    "boto3-crc64nvme": "TransferManager with ExtraArgs ChecksumAlgorithm=CRC64NVME (botocore computes it "
    "with awscrt); for multipart the server combines the parts' CRC64NVME into the whole-object value",
    "boto3-tuned": "Config(request_checksum_calculation='when_required') in shotbench.transfer.programs.boto",
    "aws-s3-sync": "awscli 1.46.2 (pip, the version `shotbench transfer --install-only` installs) runs "
    "s3transfer on botocore with the defaults above; the CLI v2's CRC64NVME default is v2's CRT path only",
    "aws-s3-cp": "as aws-s3-sync",
    "s5cmd": "s5cmd v2.3.0 on aws-sdk-go v1: service/s3 body_hash.go computes Content-MD5 for PutObject/"
    "UploadPart, and the v4 signer the body's SHA-256; no switch turns either off",
    "s3fs": "s3fs on aiobotocore/botocore: botocore's defaults as boto3-loop",
    "s3fs-async": "as s3fs",
    "obstore": "obstore 0.x _store/_aws.pyi: unsigned_payload False by default, so the body's SHA-256 "
    "is computed for the signature; checksum_algorithm unset",
    "obstore-async": "as obstore",
    "obstore-unsigned": "S3Store(unsigned_payload=True): UNSIGNED-PAYLOAD, no body hash; obstore's "
    "checksum_algorithm offers SHA256 only, so it cannot make stage's check",
}


def upload_check(tool: str) -> str:
    """The check a tool makes on upload ('—' for a tool this table does not know: e.g. raw-get)."""
    return UPLOAD_CHECK.get(tool, "—")


def same_check_tools() -> tuple[str, ...]:
    """Tools other than stage whose upload check is stage's: the like-for-like comparison."""
    return tuple(t for t, c in UPLOAD_CHECK.items() if t != "shotbench" and c.startswith(STAGE_CHECK))

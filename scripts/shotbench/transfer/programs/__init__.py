"""The transfer tools, each driven the way its own users drive it.

CLIs (`aws s3 sync`, `s5cmd`) run as subprocesses with credentials in their environment
only; Python clients (boto3, s3fs, obstore, awscrt, shotbench's `stage`) run in this process
with one client per case. A tool whose package or binary is missing says why in `check()`,
and the benchmark records that reason instead of a time.
"""

from __future__ import annotations

from shotbench.errors import UserError
from shotbench.transfer.programs.boto import Boto3TransferManager, Boto3Tuned, Boto3UploadFile, RawGet, Shotbench
from shotbench.transfer.programs.checked import AwsCrtCrc64, Boto3Crc64, ObstoreUnsignedPayload
from shotbench.transfer.programs.crt_client import AwsCrt, AwsCrtSha256
from shotbench.transfer.programs.external import (
    AWSCLI_VERSION,
    S5CMD_VERSION,
    AwsS3Cp,
    AwsS3Sync,
    CliTool,
    S5cmd,
    ensure_awscli,
    ensure_s5cmd,
)
from shotbench.transfer.programs.fs import ObstoreAsync, ObstoreSync, S3fsAsync, S3fsSync
from shotbench.transfer.programs.tool import Outcome, Target, Tool, ToolFailed, _pkg_version

__all__ = [
    "AWSCLI_VERSION",
    "DEFAULT_TOOLS",
    "S5CMD_VERSION",
    "TOOL_CLASSES",
    "CliTool",
    "Outcome",
    "Target",
    "Tool",
    "ToolFailed",
    "_pkg_version",
    "ensure_awscli",
    "ensure_s5cmd",
    "make_tools",
]

TOOL_CLASSES: dict[str, type[Tool]] = {
    cls.name: cls
    for cls in (
        AwsS3Sync,
        AwsS3Cp,
        S5cmd,
        Boto3UploadFile,
        Boto3TransferManager,
        Boto3Tuned,
        S3fsSync,
        S3fsAsync,
        ObstoreSync,
        ObstoreAsync,
        AwsCrt,
        AwsCrtSha256,
        AwsCrtCrc64,
        Boto3Crc64,
        ObstoreUnsignedPayload,
        Shotbench,
        RawGet,
    )
}
DEFAULT_TOOLS: tuple[str, ...] = (
    "aws-s3-sync",
    "s5cmd",
    "boto3-transfer-manager",
    "boto3-crc64nvme",
    "s3fs",
    "s3fs-async",
    "obstore",
    "obstore-async",
    "obstore-unsigned",
    "awscrt",
    "awscrt-crc64nvme",
    "shotbench",
    "raw-get",
)


def make_tools(names: list[str], binaries: dict[str, str] | None = None) -> list[Tool]:
    """Tool objects for the names given on the command line; unknown names are a user error."""
    binaries = binaries or {}
    unknown = [n for n in names if n not in TOOL_CLASSES]
    if unknown:
        raise UserError(f"unknown transfer tool {unknown[0]!r}; choose from {', '.join(TOOL_CLASSES)}.")
    tools = []
    for n in names:
        cls = TOOL_CLASSES[n]
        tools.append(cls(binaries.get(n)) if issubclass(cls, CliTool) else cls())
    return tools

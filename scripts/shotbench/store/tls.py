"""A private CA and a server certificate per embedded-server state folder, for https runs.

With https, TLS handshakes and certificate checks are part of what a local run measures,
as on real S3. Files live in `<state>/tls/` (the keys readable by the owner only) and are
reused across starts; clients trust `ca.crt` through the variables in `client_env`.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from shotbench.errors import UserError

SYSTEM_CA = "/etc/ssl/certs/ca-certificates.crt"


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the certificate clients must trust
    cert: Path  # the server's certificate (127.0.0.1, localhost), signed by the CA
    key: Path


def _openssl(args: list[str], cwd: Path) -> None:
    from shotbench import which

    proc = subprocess.run([str(which.openssl()), *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(
            f"openssl could not make the embedded server's certificate ({proc.stderr.strip()[-200:]}); "
            f"delete {cwd} and retry."
        )


def ensure(state: Path) -> TlsFiles:
    """The state folder's CA and server certificate, made on first use."""
    folder = Path(state) / "tls"
    files = TlsFiles(folder / "ca.crt", folder / "server.crt", folder / "server.key")
    if all(p.exists() for p in (files.ca, files.cert, files.key)):
        return files
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    _openssl(
        [
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-subj",
            "/CN=shotbench local CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
        folder,
    )
    _openssl(
        [
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
        folder,
    )
    (folder / "san.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
    )
    _openssl(
        [
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "825",
            "-extfile",
            "san.cnf",
        ],
        folder,
    )
    return files


def client_env(ca: Path | str) -> dict[str, str]:
    """Variables that point clients at the private CA: botocore/s3fs (AWS_CA_BUNDLE), OpenSSL
    defaults (SSL_CERT_FILE) and the curl tool (CURL_CA_BUNDLE). libhdf5's ROS3 drivers ignore
    all of them (see the README, *https*)."""
    ca = str(ca)
    return {"AWS_CA_BUNDLE": ca, "SSL_CERT_FILE": ca, "CURL_CA_BUNDLE": ca}


def with_system_bundle(bundle: Path | str, cmd: list[str]) -> list[str]:
    """`cmd` in a private mount namespace (unprivileged) where the system CA bundle is `bundle`.

    libhdf5's ROS3 drivers trust only the system bundle (1.14: libcurl's built-in path, no
    variable; 2.x: aws-c-io's fixed list of paths, and HDF5 exposes no TLS setting), so this
    is the one way to change what they trust without changing the machine."""
    from shotbench import which

    inner = f'mount --bind "$0" {SYSTEM_CA} && exec "$@"'
    return [str(which.unshare()), "-rm", "sh", "-c", inner, str(bundle), *cmd]


def trusting(ca: Path | str, folder: Path) -> Path:
    """A bundle of the system CAs plus a private CA (written into `folder`)."""
    path = Path(folder) / "system-plus-private.crt"
    path.write_text(Path(SYSTEM_CA).read_text().rstrip("\n") + "\n" + Path(ca).read_text())
    return path

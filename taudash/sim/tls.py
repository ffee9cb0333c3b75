"""A throwaway self-signed certificate for 127.0.0.1, so kubectl sends the bearer token.

client-go reads a kubeconfig's credentials only when the transport is TLS ("only try to read the
auth information if we are secure", tools/clientcmd/client_config.go): against an http:// server
kubectl arrives anonymous and gets 401. So the simulator serves https with a certificate made per
run and pinned in the kubeconfig (certificate-authority-data), never `insecure-skip-tls-verify`.

Made with the `openssl` command line tool (present wherever Python's ssl module is) to avoid a
dependency on `cryptography`.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path


class TlsError(RuntimeError):
    pass


@dataclass(frozen=True)
class ServerCert:
    cert: Path  # PEM; also the CA the clients pin
    key: Path  # PEM, mode 0600

    def pem(self) -> bytes:
        return self.cert.read_bytes()

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(self.cert, self.key)
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """A context that trusts exactly this certificate (for tests and in-process clients)."""
        return ssl.create_default_context(cafile=str(self.cert))


def make_cert(directory: str | Path, days: int = 30) -> ServerCert:
    """Write cert.pem and key.pem (0600) for IP 127.0.0.1 into `directory`."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("the simulator needs the `openssl` command to make its loopback certificate "
                       "(or run it with tls=False, which kubectl cannot authenticate against)")
    d = Path(directory)
    cert, key = d / "cert.pem", d / "key.pem"
    cmd = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-keyout", str(key), "-out", str(cert), "-days", str(days), "-subj", "/CN=taudash-sim",
           "-addext", "subjectAltName=IP:127.0.0.1",
           "-addext", "basicConstraints=critical,CA:TRUE",
           "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
           "-addext", "extendedKeyUsage=serverAuth"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not cert.is_file():
        raise TlsError(f"openssl could not make the loopback certificate: {proc.stderr.strip().splitlines()[-1:]}")
    key.chmod(0o600)
    return ServerCert(cert, key)

"""Test certificates, made at run time with the openssl CLI (no private key is ever committed).

    pki = TestPki()            # a CA, a server certificate for 127.0.0.1/localhost, a client one
    pki.server_cert, pki.server_key, pki.client_cert, pki.client_key, pki.ca_cert
    pki.issue("rogue-client", ca=pki.other_ca)  # a certificate from another CA
    pki.cleanup()
"""

import os
import shutil
import ssl
import subprocess
import tempfile


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


class TestPki:
    """A throw-away CA with a server and a client certificate (EC P-256, valid a day), and a
    second CA nobody trusts."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="troupe-pki-")
        self.ca = self._make_ca("ca", "Troupe test CA")
        self.other_ca = self._make_ca("other-ca", "Some other CA")
        self.ca_cert = self.ca[0]
        self.server_cert, self.server_key = self.issue(
            "server", san="IP:127.0.0.1,DNS:localhost", usage="serverAuth")
        self.client_cert, self.client_key = self.issue("gateway-client", usage="clientAuth")

    def path(self, name):
        return os.path.join(self.dir, name)

    def _key(self, name):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", f"{name}.key", cwd=self.dir)
        return self.path(f"{name}.key")

    def _make_ca(self, name, cn):
        key = self._key(name)
        _openssl("req", "-x509", "-new", "-key", key, "-sha256", "-days", "1", "-subj", f"/CN={cn}",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                 "-out", f"{name}.crt", cwd=self.dir)
        return self.path(f"{name}.crt"), key

    def issue(self, name, ca=None, san=None, usage="serverAuth,clientAuth"):
        """A certificate with CN `name` signed by `ca` (default: the test CA): (cert, key)."""
        ca_cert, ca_key = ca or self.ca
        key = self._key(name)
        _openssl("req", "-new", "-key", key, "-subj", f"/CN={name}", "-out", f"{name}.csr",
                 cwd=self.dir)
        ext = [f"extendedKeyUsage={usage}", "basicConstraints=CA:FALSE"]
        if san:
            ext.append(f"subjectAltName={san}")
        with open(self.path(f"{name}.ext"), "w") as f:
            f.write("\n".join(ext) + "\n")
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca_cert, "-CAkey", ca_key,
                 "-CAcreateserial", "-days", "1", "-sha256", "-extfile", f"{name}.ext",
                 "-out", f"{name}.crt", cwd=self.dir)
        return self.path(f"{name}.crt"), key

    def write(self, name, data):
        """A file `name` holding `data` (str or bytes) in the PKI's folder."""
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return p

    def client_context(self):
        """An `ssl.SSLContext` that trusts only the test CA."""
        return ssl.create_default_context(cafile=self.ca_cert)

    def server_context(self, require_client_cert=False, cert=None, key=None):
        """An `ssl.SSLContext` for a server with the server certificate; optionally one that
        asks for a client certificate from the test CA and refuses the handshake without."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert or self.server_cert, key or self.server_key)
        if require_client_cert:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(self.ca_cert)
        return ctx

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

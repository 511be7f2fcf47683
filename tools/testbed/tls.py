"""A throw-away certificate authority for the proxy's TLS interception.

Clients trust it through an ordinary CA bundle file (PAGETRAIL_CA_BUNDLE). Hosts in state
`tls_error` get a certificate that verification must reject: issued by a second CA that no
bundle contains, for a different host name.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import trustme

WRONG_HOST = "wrong-host.invalid"


class CertAuthority:
    def __init__(self, directory: Path) -> None:
        self._ca = trustme.CA(organization_name="pagetrail testbed CA")
        self._rogue = trustme.CA(organization_name="untrusted testbed CA")
        self.bundle_path = Path(directory) / "testbed-ca.pem"
        self._ca.cert_pem.write_to_path(str(self.bundle_path))
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}

    def server_context(self, host: str, *, broken: bool = False) -> ssl.SSLContext:
        """Server-side TLS context presenting a certificate for `host` (cached per host)."""
        key = (host, broken)
        context = self._contexts.get(key)
        if context is None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.set_alpn_protocols(["http/1.1"])
            if broken:
                self._rogue.issue_cert(WRONG_HOST).configure_cert(context)
            else:
                self._ca.issue_cert(host).configure_cert(context)
            self._contexts[key] = context
        return context

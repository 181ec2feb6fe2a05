"""TLS certificates and SuperNode keys for a Flower 1.42 deployment of ``examples/flower_app``.

Writes, into ``--out`` (which must not hold any of these files yet)::

    ca.crt              the certificate authority: SuperNodes (--root-certificates) and the flwr CLI
                        (root-certificates in $FLWR_HOME/config.toml) trust the SuperLink through it
    ca.key              the CA's private key: signs server certificates; keep it off the servers
    server.pem          the SuperLink's certificate, signed by the CA, valid for every --host
    server.key          the SuperLink's private key
    supernode-<i>       SuperNode i's private key (EC P-384, OpenSSH format): --auth-supernode-private-key
    supernode-<i>.pub   its public key: `flwr supernode register supernode-<i>.pub <connection>`

Usage (the defaults are for a federation on this machine)::

    python examples/flower_credentials.py --out credentials --supernodes 2 --host 127.0.0.1 --host localhost

Private keys are created readable by their owner only. The certificates are valid for 365 days.
This is for trying a deployment out; an organisation's own PKI should issue real certificates.
Needs only ``cryptography`` (a dependency of Flower).
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import sys
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 365


def _write(path: Path, data: bytes, private: bool) -> None:
    """Write ``data`` atomically (a temporary file renamed into place), owner-only for private keys."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "fltrust example"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def credentials(hosts: list[str], supernodes: int) -> dict[str, tuple[bytes, bool]]:
    """The files of a deployment: ``{file name: (content, is a private key)}``.

    Parameters
    ----------
    hosts : list of str
        Names and IP addresses the SuperLink is reached at (the server certificate's SANs).
    supernodes : int
        Number of SuperNode key pairs.

    Returns
    -------
    dict of str to (bytes, bool)
        File name -> (content, whether it is a private key).
    """
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = _name("fltrust example CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA384()))
    server_key = ec.generate_private_key(ec.SECP384R1())
    server = (x509.CertificateBuilder().subject_name(_name(hosts[0])).issuer_name(ca_name)
              .public_key(server_key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(start).not_valid_after(end)
              .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
              .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
              .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
              .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
              .sign(ca_key, hashes.SHA384()))

    def pem_key(key) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    files = {"ca.crt": (ca.public_bytes(serialization.Encoding.PEM), False), "ca.key": (pem_key(ca_key), True),
             "server.pem": (server.public_bytes(serialization.Encoding.PEM), False),
             "server.key": (pem_key(server_key), True)}
    for i in range(supernodes):
        key = ec.generate_private_key(ec.SECP384R1())
        files[f"supernode-{i}"] = (key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                                     serialization.NoEncryption()), True)
        files[f"supernode-{i}.pub"] = (key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                                                     serialization.PublicFormat.OpenSSH), False)
    return files


def main(argv: list[str] | None = None) -> int:
    """Write the files (see the module docstring); 2 and one line on stderr if any exists already.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the files (created if missing)")
    parser.add_argument("--supernodes", type=int, default=2, help="number of SuperNode key pairs (default 2)")
    parser.add_argument("--host", action="append", help="a name or IP address of the SuperLink (repeatable; "
                        "default: 127.0.0.1 and localhost)")
    args = parser.parse_args(argv)
    hosts = args.host or ["127.0.0.1", "localhost"]
    if args.supernodes < 0:
        parser.error("--supernodes must be >= 0")
    files = credentials(hosts, args.supernodes)
    existing = [name for name in files if (args.out / name).exists()]
    if existing:
        print(f"flower_credentials: {args.out / existing[0]} exists already; choose another --out "
              "(nothing was overwritten)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (data, private) in files.items():
        _write(args.out / name, data, private)
    print(f"wrote {', '.join(files)} to {args.out} (server certificate for {', '.join(hosts)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Make and read the webhook's TLS material: a private CA and a serving certificate it signs.

Pure: no file or network I/O and no clock; the caller passes `now`. Keys are ECDSA P-256, which every
apiserver (Go crypto/tls) and Python's ssl accept.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar, cast, get_args

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network  # what a SAN may hold, though ours never do
_T = TypeVar("_T")

DEFAULT_CA_COMMON_NAME = "fitguard-ca"
DEFAULT_CA_VALIDITY = timedelta(days=3650)
DEFAULT_SERVING_VALIDITY = timedelta(days=365)
# Certificates start a little in the past so an apiserver whose clock runs behind ours accepts them.
CLOCK_SKEW_ALLOWANCE = timedelta(minutes=5)
# Renew once two thirds of the validity have passed, leaving a third for retries and propagation.
RENEW_FRACTION = 2 / 3

# RFC 1123 host names (letters, digits, hyphens; labels of 1-63), optionally a leading "*." wildcard.
_DNS_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS_NAME = re.compile(rf"^(?:\*\.)?{_DNS_LABEL}(?:\.{_DNS_LABEL})*$")
# Kubernetes names: a Service name is a DNS-1035 label, a namespace a DNS-1123 label
# (source: k8s.io/apimachinery/pkg/util/validation, IsDNS1035Label / IsDNS1123Label).
_DNS_1035_LABEL = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_DNS_1123_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def generate_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def check_dns_name(name: str) -> str:
    """Return `name` if it is a valid DNS SAN (host name, optionally `*.` wildcard), else ValueError."""
    if len(name) > 253 or not _DNS_NAME.match(name):
        raise ValueError(f"invalid DNS name: {name!r}")
    return name


def parse_ip_address(value: str | IPAddress) -> IPAddress:
    """An IPv4 or IPv6 address, or ValueError saying which value was wrong."""
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise ValueError(f"invalid IP address: {value!r}") from None


def service_dns_names(service: str, namespace: str) -> list[str]:
    """The names the apiserver may dial a webhook Service by: svc, svc.ns, svc.ns.svc."""
    if not _DNS_1035_LABEL.match(service):
        raise ValueError(f"invalid Service name (must be a DNS-1035 label): {service!r}")
    if not _DNS_1123_LABEL.match(namespace):
        raise ValueError(f"invalid namespace (must be a DNS-1123 label): {namespace!r}")
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]


def make_ca(
    common_name: str = DEFAULT_CA_COMMON_NAME,
    valid_for: timedelta = DEFAULT_CA_VALIDITY,
    *,
    now: datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA that may sign leaf certificates only (pathlen 0)."""
    now = _validity_start(valid_for, now)
    key = generate_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW_ALLOWANCE)
        .not_valid_after(now + valid_for)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(digital_signature=True, key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(ski, critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def make_serving_cert(
    ca_cert: x509.Certificate,
    ca_key: CertificateIssuerPrivateKeyTypes,
    dns_names: Sequence[str],
    ip_addresses: Iterable[str | IPAddress] = (),
    valid_for: timedelta = DEFAULT_SERVING_VALIDITY,
    *,
    now: datetime,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A TLS server certificate for the given DNS names and IP addresses, signed by the CA."""
    now = _validity_start(valid_for, now)
    dns = _unique(check_dns_name(name) for name in dns_names)
    ips = _unique(parse_ip_address(ip) for ip in ip_addresses)
    if not dns and not ips:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    expires = now + valid_for
    if expires > ca_cert.not_valid_after_utc:
        # A leaf outliving its CA stops verifying when the CA expires: refuse rather than mislead.
        raise ValueError(
            f"the serving certificate would expire at {expires.isoformat()}, after its CA "
            f"({ca_cert.not_valid_after_utc.isoformat()}); renew the CA or shorten the validity"
        )
    key = generate_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns[0] if dns else str(ips[0]))])
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in dns]
    sans += [x509.IPAddress(ip) for ip in ips]
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - CLOCK_SKEW_ALLOWANCE)
        .not_valid_after(expires)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, _signature_hash(ca_key))
    )
    return cert, key


def subject_alt_names(cert: x509.Certificate) -> tuple[list[str], list[IPAddress | IPNetwork]]:
    """The DNS names and IP addresses a certificate is valid for (empty lists when it has no SAN)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    return san.get_values_for_type(x509.DNSName), san.get_values_for_type(x509.IPAddress)


def not_before(cert: x509.Certificate) -> datetime:
    return cert.not_valid_before_utc


def not_after(cert: x509.Certificate) -> datetime:
    return cert.not_valid_after_utc


def renew_at(cert: x509.Certificate) -> datetime:
    """When to replace the certificate: two thirds into its validity period."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start + (end - start) * RENEW_FRACTION


def certificate_to_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def certificate_from_pem(data: bytes) -> x509.Certificate:
    """The first certificate of a PEM document."""
    return x509.load_pem_x509_certificate(data)


def certificates_from_pem(data: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle, such as a caBundle holding an old and a new CA."""
    return x509.load_pem_x509_certificates(data)


def private_key_to_pem(key: CertificateIssuerPrivateKeyTypes) -> bytes:
    """Unencrypted PKCS#8 PEM, the form Kubernetes TLS Secrets and gunicorn read."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def private_key_from_pem(data: bytes) -> CertificateIssuerPrivateKeyTypes:
    """An unencrypted PEM private key that can sign certificates; ValueError for anything else."""
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, get_args(CertificateIssuerPrivateKeyTypes)):
        raise ValueError(f"unsupported private key type for signing certificates: {type(key).__name__}")
    return cast(CertificateIssuerPrivateKeyTypes, key)


def _key_usage(
    *, digital_signature: bool = False, key_cert_sign: bool = False, crl_sign: bool = False
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _signature_hash(key: CertificateIssuerPrivateKeyTypes) -> hashes.SHA256 | None:
    # Only RSA, DSA and ECDSA take a hash; EdDSA and ML-DSA sign the message itself and take None.
    if isinstance(key, rsa.RSAPrivateKey | dsa.DSAPrivateKey | ec.EllipticCurvePrivateKey):
        return hashes.SHA256()
    return None


def _validity_start(valid_for: timedelta, now: datetime) -> datetime:
    """`now` checked and cut to whole seconds, the resolution of X.509 validity times."""
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (use datetime.now(UTC))")
    if valid_for <= timedelta(0):
        raise ValueError(f"validity must be positive, got {valid_for}")
    return now.replace(microsecond=0)


def _unique(items: Iterable[_T]) -> list[_T]:
    return list(dict.fromkeys(items))

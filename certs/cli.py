"""`fitguard certs generate`: a CA and a serving certificate for the webhook, written as PEM files."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from capacity.defaults import NAMESPACE
from certs import files, material

DEFAULT_SERVICE = "fitguard-webhook"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="make the webhook's TLS material",
        description="Make the TLS material of the webhook: a private CA and a serving certificate.",
    )
    actions = parser.add_subparsers(dest="certs_command", metavar="ACTION", required=True)
    generate = actions.add_parser(
        "generate",
        help="write ca.crt, tls.crt and tls.key",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Make a new CA (ECDSA P-256) and a serving certificate it signs, and write them to DIR:\n"
            f"  {files.CA_CERT_FILE}   the CA certificate: the webhook configuration's caBundle (0644)\n"
            f"  {files.CERT_FILE}  the serving certificate (0644)\n"
            f"  {files.KEY_FILE}  its private key (0600)\n"
            "The serving certificate is valid for SERVICE, SERVICE.NAMESPACE, SERVICE.NAMESPACE.svc\n"
            "and every --dns and --ip given.\n\n"
            f"The CA private key is NOT written unless --ca-key is given (then {files.CA_KEY_FILE}, 0600);\n"
            "without it nothing can sign another certificate with this CA, so renewing means a new CA\n"
            "and a new caBundle. Existing files in DIR are replaced atomically."
        ),
    )
    _add_generate_arguments(generate)
    generate.set_defaults(func=run)


def _add_generate_arguments(generate: argparse.ArgumentParser) -> None:
    """Where to write, the names and addresses the serving certificate is valid for, validities."""
    generate.add_argument("--out", required=True, type=Path, metavar="DIR", help="directory to write to")
    generate.add_argument(
        "--dns",
        action="append",
        default=[],
        type=_dns_name,
        metavar="NAME",
        help="an extra DNS name for the serving certificate (repeatable)",
    )
    generate.add_argument(
        "--ip",
        action="append",
        default=[],
        type=_ip_address,
        metavar="ADDR",
        help="an IP address for the serving certificate (repeatable)",
    )
    generate.add_argument(
        "--service", default=DEFAULT_SERVICE, help="the webhook Service name (default: %(default)s)"
    )
    generate.add_argument(
        "--namespace",
        default=NAMESPACE,
        help="the namespace of the webhook Service (default: %(default)s)",
    )
    generate.add_argument(
        "--days",
        type=_positive_days,
        default=material.DEFAULT_SERVING_VALIDITY.days,
        help="validity of the serving certificate in days (default: %(default)s)",
    )
    generate.add_argument(
        "--ca-days",
        type=_positive_days,
        default=material.DEFAULT_CA_VALIDITY.days,
        help="validity of the CA in days; must be at least --days (default: %(default)s)",
    )
    generate.add_argument(
        "--ca-key",
        action="store_true",
        help=f"also write the CA private key to DIR/{files.CA_KEY_FILE} (0600), to sign renewals later",
    )


def run(args: argparse.Namespace) -> int:
    # The clock is read here, at the edge; certs.material only takes `now`.
    now = datetime.now(UTC)
    try:
        if args.days > args.ca_days:
            raise ValueError(f"--days ({args.days}) must not exceed --ca-days ({args.ca_days})")
        dns_names = [*material.service_dns_names(args.service, args.namespace), *args.dns]
        ca_cert, ca_key = material.make_ca(valid_for=timedelta(days=args.ca_days), now=now)
        cert, key = material.make_serving_cert(
            ca_cert, ca_key, dns_names, args.ip, valid_for=timedelta(days=args.days), now=now
        )
    except ValueError as error:
        print(f"fitguard certs generate: error: {error}", file=sys.stderr)
        return 2
    try:
        written = files.write_tls_files(args.out, ca_cert, cert, key, ca_key if args.ca_key else None)
    except OSError as error:
        print(f"fitguard certs generate: error: cannot write to {args.out}: {error}", file=sys.stderr)
        return 1
    dns, ips = material.subject_alt_names(cert)
    print(f"wrote {written.ca_cert}, {written.cert}, {written.key}")
    if written.ca_key is not None:
        print(f"wrote {written.ca_key} (the CA private key: keep it secret)")
    print(f"names: {', '.join([*dns, *map(str, ips)])}")
    expires, renew = material.not_after(cert).isoformat(), material.renew_at(cert).isoformat()
    print(f"valid until {expires}, renew after {renew}")
    return 0


def _dns_name(value: str) -> str:
    try:
        return material.check_dns_name(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _ip_address(value: str) -> material.IPAddress:
    try:
        return material.parse_ip_address(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _positive_days(value: str) -> int:
    try:
        days = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {value!r}") from None
    if days <= 0:
        raise argparse.ArgumentTypeError(f"must be at least 1 day, got {days}")
    return days

"""fitguard: the user-facing command line and the demo; the engine lives in capacity/, kube/,
webhook/, controller/ and certs/."""

from cmdline import __version__

__all__ = ["__version__"]

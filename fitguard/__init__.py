"""fitguard: the user-facing command line and the demo; the engine lives in capacity/, kube/,
webhook/, controller/ and certs/."""

__version__ = "0.1.0"

"""TLS material for the webhook: a CA and a serving certificate, made and rotated."""

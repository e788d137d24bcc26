"""The admission webhook: a Flask app served by gunicorn over TLS, answering from memory."""

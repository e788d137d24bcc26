# syntax=docker/dockerfile:1
# One image for every subcommand: `fitguard webhook ...`, `fitguard controller ...`, `fitguard certs ...`.
# The install steps are the Makefile's (a venv, the pinned requirements, then the project with
# --no-deps), so what `make test` tested is what runs here. Pin the base by digest for production.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /opt/fitguard
# Dependencies first: this layer is rebuilt only when the pins change.
COPY requirements.txt ./
RUN python -m pip install --upgrade "pip>=24" \
 && python -m pip install -r requirements.txt
COPY pyproject.toml README.md LICENSE ./
COPY capacity/ capacity/
COPY kube/ kube/
COPY webhook/ webhook/
COPY controller/ controller/
COPY certs/ certs/
COPY cmdline/ cmdline/
COPY fitguard/ fitguard/
COPY examples/ examples/
RUN python -m pip install --no-deps . \
 && python -m compileall -q /opt/venv/lib

FROM ${PYTHON_IMAGE}
# A fixed numeric user: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --gid 65532 fitguard \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin fitguard
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/fitguard /opt/fitguard
WORKDIR /opt/fitguard
USER 65532:65532
EXPOSE 8443 8080
ENTRYPOINT ["fitguard"]
CMD ["--help"]

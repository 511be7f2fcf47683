# pagetrail with every extra ([all]): one image for the worker, the MCP server over HTTP, the
# Slack app and the one-off jobs (`db upgrade`, `recover --batch`): only the command differs
# (compose.yaml). Build: docker build -t pagetrail .   (or podman build)
# BASE: any Debian-like image with Python >= 3.11 and its venv module (python3 -m venv).
ARG BASE=python:3.12-slim-bookworm

FROM ${BASE} AS build
COPY . /src
# The wheel first (the image holds the installed package, not the source tree), then a
# virtualenv with it and its extras; the next stage copies only that virtualenv.
RUN python3 -m venv /opt/pagetrail \
 && /opt/pagetrail/bin/python -m pip install --no-cache-dir --quiet --upgrade pip \
 && /opt/pagetrail/bin/python -m pip wheel --no-cache-dir --quiet --no-deps -w /tmp/dist /src \
 && /opt/pagetrail/bin/python -m pip install --no-cache-dir --quiet \
      "$(ls /tmp/dist/pagetrail-*.whl)[all]" \
 && /opt/pagetrail/bin/python -m pip check \
 && /opt/pagetrail/bin/pagetrail --version

FROM ${BASE}
# Not root: a system user owning only the data directory (SQLite, caches).
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/pagetrail \
      --shell /usr/sbin/nologin pagetrail
COPY --from=build /opt/pagetrail /opt/pagetrail
ENV PATH=/opt/pagetrail/bin:$PATH \
    PAGETRAIL_DATA_DIR=/var/lib/pagetrail \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
USER pagetrail:pagetrail
WORKDIR /var/lib/pagetrail
VOLUME ["/var/lib/pagetrail"]
# 8765: `serve mcp --http`; 3000: `serve slack`.
EXPOSE 8765 3000
ENTRYPOINT ["pagetrail"]
CMD ["--help"]

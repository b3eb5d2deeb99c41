# hanzo-engine: a Meilisearch-compatible search engine.
FROM python:3.11-slim AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY csrc ./csrc
COPY src ./src
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
ENV MEILI_HTTP_ADDR=0.0.0.0:7700 \
    MEILI_DB_PATH=/meili_data/data.ms \
    MEILI_DUMP_DIR=/meili_data/dumps \
    MEILI_SNAPSHOT_DIR=/meili_data/snapshots \
    MEILI_ENV=development
WORKDIR /meili_data
VOLUME /meili_data
EXPOSE 7700
CMD ["hanzo-engine"]

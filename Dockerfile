# syntax=docker/dockerfile:1
# mooncake's container image: built by the repository's own set-up script and CMake
# commands (what CI builds is what ships), run as a non-root user on a slim Debian 13
# (librdkafka 2.8 from its packages; CI's Debian 12 builds the same version) with
# only the shared libraries the two binaries link against, the IANA time zone files
# (tzdata: /usr/share/zoneinfo, read by the jobs role and the gateway), plus curl and CA
# certificates for the Helm chart's test Pod. Nothing in it is written at run time, so
# it runs with a read-only root filesystem. tests/unit/dockerfile_test.py lints this
# file and checks both stages against tools/setup and the binaries' libraries.

FROM debian:trixie AS build
WORKDIR /src
COPY . .
RUN tools/setup --build-only \
 && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMOONCAKE_INTEGRATION=OFF \
 && cmake --build build -j "$(nproc)" \
 && cmake --install build --prefix /out --strip

FROM debian:trixie-slim
LABEL org.opencontainers.image.title="mooncake" \
      org.opencontainers.image.description="Delayed HTTP tasks on Apache Kafka, exactly once" \
      org.opencontainers.image.version="0.1.0"
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates curl libcurl4t64 libjansson4 libmicrohttpd12t64 librdkafka1 tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 mooncake \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin mooncake
COPY --from=build /out/bin/mooncake /out/bin/mooncakectl /usr/local/bin/
# The schemas, for writer schemas of earlier versions (--command-writer-schemas).
COPY --from=build /src/schemas /usr/share/mooncake/schemas
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["mooncake"]
CMD ["--help"]

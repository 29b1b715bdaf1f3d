# Troupe (gateway) and troupe-sim (worker simulator) on Debian 12, built the way the README
# builds them. docker-compose.yml runs a three-node cluster from this image.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src

# Dependencies first: the layer survives source changes.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh --no-browser && rm -rf /var/lib/apt/lists/*

# The release build is profile-guided (scripts/build-pgo.sh: an instrumented build, a training
# run in front of simulated workers, the optimized build; ~2x the build time, ~9% fewer
# instructions per request, docs/performance.md "Profile-guided build").
# `--build-arg TROUPE_PGO=0` builds as scripts/build.sh does, in half the time.
ARG TROUPE_PGO=1
COPY . .
RUN if [ "$TROUPE_PGO" = 1 ]; then BUILD_DIR=/tmp/build scripts/build-pgo.sh; \
    else BUILD_DIR=/tmp/build scripts/build.sh troupe troupe-sim; fi \
    && install -m 0755 /tmp/build/apps/troupe/troupe /tmp/build/apps/troupe-sim/troupe-sim \
       /usr/local/bin/ \
    && install -m 0755 scripts/cluster-certs.sh /usr/local/bin/troupe-cluster-certs \
    && rm -rf /tmp/build \
    && mkdir -p /var/lib/troupe

# API, metrics, cluster port. Beyond loopback the API needs a key: `docker run -e TROUPE_API_KEY=...`
# (start-up refuses the API without one, unless --allow-unauthenticated).
EXPOSE 30000 29000 7000
CMD ["troupe", "--host", "0.0.0.0"]

# Troupe (gateway) and troupe-sim (worker simulator) on Debian 12, built the way the README
# builds them. docker-compose.yml runs a three-node cluster from this image.
FROM debian:12

ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src

# Dependencies first: the layer survives source changes.
COPY scripts/install-deps.sh scripts/install-deps.sh
RUN scripts/install-deps.sh --no-browser && rm -rf /var/lib/apt/lists/*

COPY . .
RUN BUILD_DIR=/tmp/build scripts/build.sh troupe troupe-sim \
    && install -m 0755 /tmp/build/apps/troupe/troupe /tmp/build/apps/troupe-sim/troupe-sim \
       /usr/local/bin/ \
    && install -m 0755 scripts/cluster-certs.sh /usr/local/bin/troupe-cluster-certs \
    && rm -rf /tmp/build \
    && mkdir -p /var/lib/troupe

# glibc's per-size cache of freed chunks (7 a size by default) runs dry when the heap holds
# thousands of workers' connections, and malloc falls back to walking cold bins: at 4,000
# workers a larger cache takes 39% of the CPU per request, RSS unchanged (docs/performance.md,
# "c=64 at 4,000 workers"; bench/fleet_malloc.py).
ENV GLIBC_TUNABLES=glibc.malloc.tcache_count=1024

# API, metrics, cluster port.
EXPOSE 30000 29000 7000
CMD ["troupe", "--host", "0.0.0.0"]

# syntax=docker/dockerfile:1
# mockworld's CPU image: `mockworld worker` (the default command), `mockworld gateway`,
# `mockworld codec-server` and the rest of the CLI. It installs the npm package built from this
# checkout (`npm pack`: exactly what a user of the package gets), compiled, without dev
# dependencies. Build from the repository root:
#   docker build -f deploy/docker/cpu-worker.Dockerfile -t mockworld-cpu:$(git rev-parse --short HEAD) .
ARG NODE_VERSION=20.19.5

FROM node:${NODE_VERSION}-bookworm-slim AS package
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts: the build needs TypeScript only, not node-llama-cpp's native step.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
RUN npm run build \
 && mkdir /pkg \
 && npm pack --ignore-scripts --pack-destination /pkg \
 && mv /pkg/mockworld-*.tgz /pkg/mockworld.tgz

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production \
    MOCKWORLD_HOME=/home/node/.mockworld \
    MOCKWORLD_METRICS_ADDRESS=0.0.0.0:9464
COPY --from=package /pkg/mockworld.tgz /tmp/mockworld.tgz
# The package's own tarball, its dependencies pinned by its package.json.
RUN npm install --global --omit=dev --no-audit --no-fund /tmp/mockworld.tgz \
 && rm /tmp/mockworld.tgz \
 && npm cache clean --force
# The image's `node` user.
USER 1000
WORKDIR /home/node
# 9464: the worker's Prometheus metrics (and probe); 11437: the model gateway; 8888: the codec server.
EXPOSE 9464 11437 8888
ENTRYPOINT ["mockworld"]
CMD ["worker"]

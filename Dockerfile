# syntax=docker/dockerfile:1
# Accord server image (README "Container"). Two stages:
#   build   - installs every dependency and runs `npm run build`: the same tsc build (tsconfig.build.json,
#             scripts/finish-build.mjs) whose dist/ the package ships, plus the reference customer backend
#             and the master-key rotation command, which tsconfig.build.json compiles beside it.
#   runtime - Node.js, the production dependencies and dist/ only; runs as the unprivileged
#             `node` user with `node` itself as PID 1 (exec-form CMD, no shell, no npm), so SIGTERM
#             reaches the server, which drains in-flight requests and logs `stopped`. Node runs with
#             its default young generation (docs/decisions.md, "Node's young generation").
# Node 24 is a supported LTS line and satisfies package.json `engines` (docs/decisions.md, "Container").
# No secret is baked in: ACCORD_MASTER_KEY, DATABASE_URL and the bootstrap variables come from the
# environment at run time (compose.yaml reads them from your shell or an .env file).

ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/finish-build.mjs ./scripts/
COPY core ./core
COPY adapters ./adapters
COPY entry ./entry
COPY runtimes ./runtimes
COPY examples/customer-backend ./examples/customer-backend
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8787 \
    ACCORD_DATA_DIR=/data
WORKDIR /app
COPY package.json package-lock.json ./
# The package's dependencies and the optional peers the server and the reference backend load
# (package.json "peerDependencies", pinned there: the SQL storage, the node:http platform, the OTLP
# exporters, Stripe), made the image's own dependencies; nothing from devDependencies.
RUN node -e "const fs = require('node:fs'); const p = JSON.parse(fs.readFileSync('package.json', 'utf8')); for (const n of ['@effect/platform-node', '@effect/sql', '@effect/sql-pg', '@effect/experimental', '@electric-sql/pglite', 'pg', 'pg-copy-streams', '@effect/opentelemetry', 'stripe']) p.dependencies[n] = p.peerDependencies[n]; delete p.devDependencies; fs.writeFileSync('package.json', JSON.stringify(p))" \
 && npm install --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8787
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8787) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/runtimes/node/main.js"]

# syntax=docker/dockerfile:1
# The gateway's image. The build stage installs everything and compiles src/ to dist/; the
# final stage holds dist/, the production dependencies, package.json (its "type": "module")
# and the vendored schema the embedded platform reads, nothing else, and builds or installs
# nothing when it starts. test/deploy/productionRun.test.ts runs this final stage's tree.
ARG NODE_VERSION=24

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
# tsconfig.json: esbuild reads it as `npm run build` does.
COPY tsconfig.json ./
COPY src/ src/
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts

FROM node:${NODE_VERSION}-bookworm-slim
WORKDIR /app
# Off loopback the upstream URLs and tokens are required: without them the start fails (exit 2).
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 ADMIN_PORT=9090
COPY --from=dependencies /app/node_modules node_modules/
COPY --from=build /app/dist dist/
COPY package.json ./
COPY queries/schema/ queries/schema/
# The one writable folder: the usage spool and, with the embedded upstreams, their data
# (both default to data/ in the application folder). Mount a volume here to keep the spool.
RUN mkdir data && chown node:node data
VOLUME /app/data
USER node
# The public routes, and /healthz, /readyz and /metrics (keep this one off the public balancer).
EXPOSE 3000 9090
# What `npm start` runs, without npm in between: SIGTERM reaches the gateway itself.
CMD ["node", "--enable-source-maps", "--heap-growing-percent=50", "dist/main.js"]

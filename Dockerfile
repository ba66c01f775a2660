# syntax=docker/dockerfile:1
# Build: docker build --build-arg BUILD_COMMIT=$(git rev-parse --short HEAD) -t tenant-api .
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json openapi.yaml ./
COPY codegen ./codegen
COPY src ./src
COPY handlers ./handlers
COPY db ./db
# The embedded PostgreSQL (an optional dependency, for local development) stays out of the image.
RUN npm run build && npm prune --omit=dev --omit=optional

FROM node:20-bookworm-slim AS runtime
ARG BUILD_COMMIT=unknown
ARG BUILD_TIME=
ENV NODE_ENV=production PORT=3000 BUILD_COMMIT=${BUILD_COMMIT} BUILD_TIME=${BUILD_TIME}
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json /app/openapi.yaml ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "require('http').get('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"
# Commands run compiled, with the container's configuration:
#   docker exec <container> node dist/src/main.js grant-operator EMAIL   (also revoke-operator, disable-account, enable-account, migrate)
# SIGTERM → stop accepting, finish in-flight requests, close pools.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js", "serve"]

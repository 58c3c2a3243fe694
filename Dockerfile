# syntax=docker/dockerfile:1
# Arbiter: multi-stage build. The service runs TypeScript through tsx (a production dependency), so the
# build stage only installs and checks; the runtime image carries production dependencies and sources.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim AS check
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json biome.json ./
COPY src ./src
COPY migrations ./migrations
RUN npx tsc --noEmit -p tsconfig.json || (echo "typecheck failed" && exit 1)

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    ARBITER_DATA_DIR=/var/lib/arbiter
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY --from=check /app/src ./src
COPY migrations ./migrations
COPY openapi ./openapi
RUN mkdir -p /var/lib/arbiter && chown -R node:node /var/lib/arbiter
USER node
EXPOSE 8080
VOLUME ["/var/lib/arbiter"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--import", "tsx", "src/server.ts"]

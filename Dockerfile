# syntax=docker/dockerfile:1
# Arbiter: multi-stage build. The build stage compiles TypeScript to dist/ (and makes the embedded database's
# template there); the runtime image carries only production dependencies, the compiled JavaScript, the
# migrations and the OpenAPI document, and runs `node`.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/transparency/package.json ./packages/transparency/
COPY clients/typescript/package.json ./clients/typescript/
# --ignore-scripts: `prepare` would compile, and the compiler is a development dependency.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/transparency/package.json ./packages/transparency/
COPY clients/typescript/package.json ./clients/typescript/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/transparency/tsconfig.json ./packages/transparency/
COPY packages/transparency/src ./packages/transparency/src
# The typed client: `arbiter mcp` (the MCP server) calls Arbiter through it.
COPY clients/typescript/tsconfig.json ./clients/typescript/
COPY clients/typescript/src ./clients/typescript/src
COPY src ./src
COPY console ./console
COPY scripts ./scripts
# The build leaves dist/ as a link to the build directory it made (scripts/build.mjs swaps it under running
# processes); the image takes that directory itself, the embedded database's template (dist/embedded-pgdata) in it.
RUN npm run build && mv "$(readlink -f dist)" dist.built && rm dist && mv dist.built dist

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    ARBITER_DATA_DIR=/var/lib/arbiter
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json package-lock.json ./
COPY --from=build /app/dist ./dist
COPY --from=build /app/packages/transparency/package.json ./packages/transparency/
COPY --from=build /app/packages/transparency/dist ./packages/transparency/dist
COPY --from=build /app/clients/typescript/package.json ./clients/typescript/
COPY --from=build /app/clients/typescript/dist ./clients/typescript/dist
# The ops console's page and styles; its compiled scripts are in dist/console, uPlot in node_modules.
COPY console/index.html console/styles.css console/icon.svg ./console/
COPY migrations ./migrations
COPY openapi ./openapi
RUN mkdir -p /var/lib/arbiter && chown -R node:node /var/lib/arbiter
USER node
EXPOSE 8080
VOLUME ["/var/lib/arbiter"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# The heap setting of `npm start` (package.json): a 1 GiB heap limit makes V8 collect when the heap has grown by
# about 1.6x since its last full collection instead of 4x: under 512 KB evidence bodies the process peaked at
# 219 MB instead of 384 MB (bench, scale phase, with 8 MB semi-spaces then; 215-237 MB with the main thread's
# 16 MB since). The main thread's young generation is V8's own, sized from the container's memory; worker threads
# get 8 MB semi-spaces from the code (src/worker-heap.ts), which a --max-semi-space-size flag would override. Load
# is shed (503) at 768 MB of heap, before the limit.
CMD ["node", "--max-old-space-size=1024", "dist/server.js"]

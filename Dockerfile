# Production image of the Typst PDF service.
# Build:  docker build -t typst-pdf-service .
# Run:    docker run -p 3000:3000 -e API_KEYS=<key> typst-pdf-service
# Test:   npm run test:container (builds this file, runs the image, renders through it; run by CI)

# --- build: compile the TypeScript and bundle the playground page ------------
FROM node:24-bookworm-slim AS build
WORKDIR /app
# A C compiler for what the service preloads to fill freed memory (native/free-fill.c).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
# The client package is an npm workspace: npm ci needs its package.json, and the
# build (which compiles it first, and whose scripts import it by name) its sources.
COPY package.json package-lock.json .npmrc ./
COPY packages ./packages
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY playground ./playground
COPY scripts ./scripts
COPY native ./native
COPY examples ./examples
# The service's TypeScript, the bundled fonts as files (dist/fonts/), the freed-memory fill (dist/native/), then the playground page (dist/playground/).
RUN npm run build && test -f dist/native/free-fill.so

# --- runtime dependencies only (the Typst binding; the fonts are already in dist/fonts) ---
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY packages/client/package.json ./packages/client/
# The service does not use the client: its workspace link is dropped.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && rm -f node_modules/typst-pdf-client \
 && npm cache clean --force

# --- runtime ------------------------------------------------------------------
# Debian (glibc) slim: the Typst binding ships linux-x64 gnu and musl builds;
# the service uses only its bundled fonts (dist/fonts) and FONT_PATH, never system fonts.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY --from=deps --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist/src ./dist/src
COPY --from=build --chown=root:root /app/dist/playground ./dist/playground
COPY --from=build --chown=root:root /app/dist/fonts ./dist/fonts
COPY --from=build --chown=root:root /app/dist/native ./dist/native
COPY --chown=root:root package.json NOTICES.md ./
COPY --chown=root:root licenses ./licenses
# The Factur-X XSDs the workers check e-invoices against (read from /app/schemas).
COPY --chown=root:root schemas ./schemas
# The code is owned by root and read-only to the service, which runs as the unprivileged `node` user.
USER node
EXPOSE 3000
# Liveness only (/healthz): a full render queue makes /readyz answer 503, which is load, not ill health.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM from `docker stop` lets running compiles finish (up to the compile limit) before exit.
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]

# commission-api: one image for every role (`serve`, `serve --role api`, `serve --role worker`).
# Node 24 runs the TypeScript sources directly (type stripping): there is no build stage.
FROM node:24-slim

ENV NODE_ENV=production
WORKDIR /app

# Production dependencies only, exactly as the lockfile pins them. --ignore-scripts: no dependency of the
# runtime needs an install script (the `node` dev dependency that has one is not installed here).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force

COPY src ./src

# DATA_DIR: the embedded store's file and the demo key. A named volume mounted here starts with this
# directory's owner, so the non-root user can write it.
RUN mkdir -p /data && chown node:node /data
USER node

ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
EXPOSE 3000

# Ready = the store answers (and, with role all, the worker runs). The image has no curl: Node's fetch asks.
# A worker-only container serves no HTTP: docker-compose.yml disables this check for it.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "src/cli.ts", "serve"]

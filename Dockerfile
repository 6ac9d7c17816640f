# commission-api: one image for every role (`serve`, `serve --role api`, `serve --role worker`).
# Node 24 runs the TypeScript sources directly (type stripping): nothing is compiled. The first stage installs the
# production dependencies; the image itself holds Node, those dependencies, package.json and src/, and no npm.
# test/image.test.ts installs and boots the service the way this file does.
FROM node:24-slim AS dependencies
WORKDIR /app
# Exactly as the lockfile pins them. --ignore-scripts: no dependency of the runtime needs an install script
# (the `node` dev dependency that has one is not installed here).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app

# npm, npx, corepack and yarn are not needed to run the service: fewer files to ship and to patch.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*

COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src

# DATA_DIR: the embedded store's file and the demo key. A named volume mounted here starts with this
# directory's owner, so the non-root user can write it. The code stays root's: the service cannot change it.
RUN mkdir -p /data && chown node:node /data
USER node

# The young generation's bound that `npm start` gives too (docs/decisions.md: "The young generation is bounded"),
# and the compile cache it turns on (scripts/compile-cache.mjs): written at the first start, read by the next ones.
ENV HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    NODE_OPTIONS=--max-semi-space-size=16 \
    NODE_COMPILE_CACHE=/tmp/node-compile-cache
EXPOSE 3000

# Ready = the store answers (and, with role all, the worker runs). A worker-only container (`--role worker`)
# answers on WORKER_HEALTH_PORT. The image has no curl: Node's fetch asks.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.WORKER_HEALTH_PORT || process.env.PORT || 3000) + '/health/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

CMD ["node", "src/cli.ts", "serve"]

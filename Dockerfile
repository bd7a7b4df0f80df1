# One image for both processes: `web` (node dist/api/main.js) and `worker` (node dist/workers/main.js).
# Node 26, the active LTS (maintained to April 2029; CI's Node 26 leg runs the client tests on it). Node 22 and 24 LTS
# work too: --build-arg NODE_IMAGE=node:22-bookworm-slim. `npm install` follows package-lock.json; not `npm ci`, which
# npm 11 refuses for this lock file (npm/cli#8805), as in CI.
ARG NODE_IMAGE=node:26-bookworm-slim
FROM ${NODE_IMAGE}
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm install --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev
ENV NODE_ENV=production PORT=3000
EXPOSE 3000
CMD ["node", "dist/api/main.js"]

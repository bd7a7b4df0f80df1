# One image for both processes: `web` (node dist/api/main.js) and `worker` (node dist/workers/main.js).
# Node 22 LTS (maintained to April 2027; Node 24 LTS works too: --build-arg NODE_IMAGE=node:24-bookworm-slim).
ARG NODE_IMAGE=node:22-bookworm-slim
FROM ${NODE_IMAGE}
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev
ENV NODE_ENV=production PORT=3000
EXPOSE 3000
CMD ["node", "dist/api/main.js"]

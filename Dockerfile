# One image for both processes: `web` (node dist/api/main.js) and `worker` (node dist/workers/main.js).
# Node 24 LTS (maintained to April 2028; CI's Node 24 leg runs the client tests on it). Node 22 LTS works too:
# --build-arg NODE_IMAGE=node:22-bookworm-slim. `npm ci` with its npm (11.19) takes this lock file.
ARG NODE_IMAGE=node:24-bookworm-slim
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

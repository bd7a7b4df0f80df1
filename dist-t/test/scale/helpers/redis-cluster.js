"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.spawnNode = spawnNode;
exports.masterOf = masterOf;
exports.waitClusterHealthy = waitClusterHealthy;
exports.startRedisCluster = startRedisCluster;
/**
 * A real Redis Cluster for the scale suite: six `redis-server --cluster-enabled yes` on loopback ports
 * (3 masters, 3 replicas), joined with `redis-cli --cluster create … --cluster-replicas 1`. No persistence;
 * a short node timeout (1 s) so a killed master's replica takes over within a few seconds.
 */
const node_child_process_1 = require("node:child_process");
const node_fs_1 = __importDefault(require("node:fs"));
const node_path_1 = __importDefault(require("node:path"));
const node_util_1 = require("node:util");
const process_utils_1 = require("../../../shared/runtime/process-utils");
const run = (0, node_util_1.promisify)(node_child_process_1.execFile);
/** Starts (or restarts, on its saved nodes.conf) one cluster node in `<dir>/<port>`. */
function spawnNode(dir, port) {
    const nodeDir = node_path_1.default.join(dir, String(port));
    node_fs_1.default.mkdirSync(nodeDir, { recursive: true });
    const log = node_fs_1.default.openSync(node_path_1.default.join(nodeDir, 'redis.log'), 'a');
    // prettier-ignore
    const child = (0, node_child_process_1.spawn)('redis-server', [
        '--port', String(port), '--bind', '127.0.0.1', '--protected-mode', 'no', '--dir', nodeDir,
        '--pidfile', node_path_1.default.join(nodeDir, 'redis.pid'),
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '1000',
        '--cluster-replica-validity-factor', '0', '--save', '', '--appendonly', 'no',
    ], { stdio: ['ignore', log, log] });
    return {
        port,
        child,
        get running() {
            return child.exitCode === null && child.signalCode === null;
        },
    };
}
/** The live cluster's node ports and the port of the master serving a key's slot, seen from any live node. */
async function masterOf(ports, key) {
    for (const port of ports) {
        const slotText = await cli(port, 'CLUSTER', 'KEYSLOT', key).catch(() => '');
        if (!slotText.trim())
            continue;
        const slot = Number(slotText.trim());
        for (const line of (await cli(port, 'CLUSTER', 'NODES')).trim().split('\n')) {
            const f = line.split(' ');
            if (!f[2].includes('master') || f[2].includes('fail'))
                continue;
            for (const range of f.slice(8)) {
                const [a, b] = range.split('-').map(Number);
                if (slot >= a && slot <= (b ?? a))
                    return Number(f[1].split(':')[1].split('@')[0]);
            }
        }
    }
    throw new Error(`no live master serves the slot of ${key}`);
}
/** Resolves once every node that answers says cluster_state:ok with all 16384 slots served. */
async function waitClusterHealthy(ports, timeoutMs = 30_000) {
    const until = Date.now() + timeoutMs;
    for (;;) {
        const infos = (await Promise.all(ports.map((p) => cli(p, 'CLUSTER', 'INFO').catch(() => null)))).filter((i) => i !== null);
        if (infos.length && infos.every((i) => /cluster_state:ok/.test(i) && /cluster_slots_ok:16384/.test(i)))
            return;
        if (Date.now() > until)
            throw new Error(`the Redis Cluster did not become healthy in ${timeoutMs} ms`);
        await (0, process_utils_1.sleep)(100);
    }
}
async function cli(port, ...args) {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
    return stdout;
}
/** Six consecutive ports whose cluster bus ports (+10000) are free too. */
async function pickPorts(count) {
    for (let attempt = 0; attempt < 50; attempt++) {
        const base = 20_000 + Math.floor(Math.random() * 20_000);
        const ports = Array.from({ length: count }, (_, i) => base + i);
        const free = await Promise.all(ports.flatMap((p) => [(0, process_utils_1.isPortFree)(p), (0, process_utils_1.isPortFree)(p + 10_000)]));
        if (free.every(Boolean))
            return ports;
    }
    throw new Error('no free ports for the Redis Cluster');
}
async function startRedisCluster(dir, opts = {}) {
    const masters = opts.masters ?? 3;
    const ports = await pickPorts(masters * 2);
    const nodes = [];
    for (const port of ports)
        nodes.push(spawnNode(dir, port));
    const stop = async () => {
        await Promise.all(nodes.map((n) => {
            if (!n.running)
                return Promise.resolve();
            const gone = new Promise((r) => n.child.once('exit', () => r()));
            n.child.kill('SIGKILL');
            return gone;
        }));
        // Nodes restarted by a test (restartNode) are not our children: stop them through their pid files.
        for (const port of ports) {
            try {
                const pid = Number(node_fs_1.default.readFileSync(node_path_1.default.join(dir, String(port), 'redis.pid'), 'utf8').trim());
                if (pid > 0)
                    process.kill(pid, 'SIGKILL');
            }
            catch {
                // no pid file, or already gone
            }
        }
    };
    try {
        for (const n of nodes) {
            const until = Date.now() + 15_000;
            while ((await cli(n.port, 'PING').catch(() => '')).trim() !== 'PONG') {
                if (!n.running)
                    throw new Error(`redis-server on ${n.port} exited; see ${dir}/${n.port}/redis.log`);
                if (Date.now() > until)
                    throw new Error(`redis-server on ${n.port} did not answer within 15 s`);
                await (0, process_utils_1.sleep)(50);
            }
        }
        await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { timeout: 60_000 });
    }
    catch (e) {
        await stop();
        throw e;
    }
    const live = () => nodes.filter((n) => n.running).map((n) => n.port);
    const cluster = {
        url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`,
        nodes,
        masterOf: (key) => masterOf(live(), key),
        async kill(port) {
            const n = nodes.find((x) => x.port === port);
            if (!n || !n.running)
                return;
            const gone = new Promise((r) => n.child.once('exit', () => r()));
            n.child.kill('SIGKILL');
            await gone;
        },
        waitHealthy: (timeoutMs) => waitClusterHealthy(live(), timeoutMs),
        stop,
    };
    await cluster.waitHealthy();
    return cluster;
}

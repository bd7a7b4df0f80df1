"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.firstLine = firstLine;
exports.waitReady = waitReady;
exports.resetDatabase = resetDatabase;
const pg_1 = require("pg");
const migrate_1 = require("../shared/db/migrate");
/** The first line a child process prints (the fake provider's URL, a load run's JSON result). */
function firstLine(child) {
    return new Promise((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c) => {
            out += c.toString();
            const nl = out.indexOf('\n');
            if (nl >= 0)
                resolve(out.slice(0, nl).trim());
        });
        child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
    });
}
/** Waits until a gateway at `url` answers /readyz (every 200 ms, for up to `ms`). */
async function waitReady(url, ms = 60_000) {
    const until = Date.now() + ms;
    while (Date.now() < until) {
        if (await fetch(`${url}/readyz`).then((r) => r.ok, () => false))
            return;
        await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`gateway ${url} not ready`);
}
/** Drops and recreates the database of `url`, then migrates it: every bench run starts from an empty schema. */
async function resetDatabase(url) {
    const u = new URL(url);
    const name = u.pathname.slice(1);
    u.pathname = '/postgres';
    const admin = new pg_1.Client({ connectionString: u.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
    await admin.end();
    await (0, migrate_1.migrate)(url);
}

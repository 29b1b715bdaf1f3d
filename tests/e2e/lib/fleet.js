// Starts troupe-sim workers and a troupe gateway on free loopback ports for one test file, and
// stops them when the file is done. Binaries come from TROUPE_BIN / TROUPE_SIM_BIN (CTest sets
// them) or from ./build/apps.

import { spawn } from 'node:child_process';
import { get as httpsGet } from 'node:https';
import { createServer } from 'node:net';
import { mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const troupeBin = process.env.TROUPE_BIN ?? join(root, 'build', 'apps', 'troupe', 'troupe');
const simBin = process.env.TROUPE_SIM_BIN ?? join(root, 'build', 'apps', 'troupe-sim', 'troupe-sim');

/** The key the gateway requires; the SDK clients send it. */
export const gatewayKey = 'sk-troupe-e2e';

/** A TCP port nobody listens on right now. */
async function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The status of GET `url` over HTTPS, trusting only the PEM CA `ca`. */
function httpsStatus(url, ca) {
  return new Promise((ok, fail) => {
    const req = httpsGet(url, { ca, timeout: 1000 }, (res) => {
      res.resume();
      ok(res.statusCode);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', fail);
  });
}

async function waitFor(url, what, proc, timeoutMs = 15000, ca = null) {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) {
      throw new Error(`${what} exited with ${proc.exitCode}:\n${proc.log()}`);
    }
    try {
      const status = ca
        ? await httpsStatus(url, ca)
        : (await fetch(url, { signal: AbortSignal.timeout(1000) })).status;
      if (status === 200) {
        return;
      }
      last = `status ${status}`;
    } catch (e) {
      last = e.message;
    }
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what} (${last}):\n${proc.log()}`);
}

function start(bin, args, name) {
  const dir = mkdtempSync(join(tmpdir(), `${name}-`));
  const logFile = join(dir, 'out.log');
  const fd = openSync(logFile, 'w');
  const proc = spawn(bin, args, { stdio: ['ignore', fd, fd] });
  proc.log = () => {
    try {
      return readFileSync(logFile, 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };
  return proc;
}

async function stop(proc) {
  if (proc.exitCode !== null || proc.signalCode !== null) {
    return;
  }
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
  await exited;
  clearTimeout(timer);
}

/**
 * Starts `workers` simulators serving `model` (instant: no simulated latency) and a gateway in
 * front of them that requires `gatewayKey`. With `tls` ({ cert, key, ca }: file paths, and the
 * CA's PEM text) the gateway serves HTTPS with that certificate. Returns { url, sims, stop() }.
 */
export async function startFleet({ model = 'sim-model', workers = 1, simFlags = [], tls = null } = {}) {
  const sims = [];
  const procs = [];
  try {
    for (let i = 0; i < workers; i++) {
      const port = await freePort();
      const proc = start(
        simBin,
        ['--port', String(port), '--model-id', model, '--ttft-base-ms', '0',
         '--prefill-us-per-token', '0', '--itl-ms', '0', ...simFlags],
        `sim-${port}`);
      procs.push(proc);
      const url = `http://127.0.0.1:${port}`;
      await waitFor(`${url}/health`, `troupe-sim on ${port}`, proc);
      sims.push({ url, proc });
    }
    const port = await freePort();
    const gateway = start(
      troupeBin,
      ['--host', '127.0.0.1', '--port', String(port), '--prometheus-port', '0',
       '--api-key', gatewayKey, '--worker-urls', ...sims.map((s) => s.url),
       ...(tls ? ['--tls-cert-path', tls.cert, '--tls-key-path', tls.key] : [])],
      `troupe-${port}`);
    procs.push(gateway);
    const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    await waitFor(`${url}/readiness`, `troupe on ${port}`, gateway, 15000, tls?.caPem ?? null);
    return {
      url,
      sims,
      gateway,
      async stop() {
        for (const p of procs.reverse()) {
          await stop(p);
        }
      },
    };
  } catch (e) {
    for (const p of procs) {
      await stop(p);
    }
    throw e;
  }
}

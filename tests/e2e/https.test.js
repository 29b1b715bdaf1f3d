// The official SDKs against a gateway serving HTTPS (--tls-cert-path/--tls-key-path) with a
// certificate from a private CA made for this run. Applications trust the CA the standard way
// (NODE_EXTRA_CA_CERTS), and nothing else changes; without it, the SDKs refuse the connection.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startFleet, gatewayKey } from './lib/fleet.js';

const here = dirname(fileURLToPath(import.meta.url));
let dir;
let fleet;

/** A CA and a server certificate for 127.0.0.1 signed by it (EC P-256, valid a day). */
function makeCerts() {
  const run = (...args) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = (name) => run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256',
    '-out', `${name}.key`);
  key('ca');
  run('req', '-x509', '-new', '-key', 'ca.key', '-sha256', '-days', '1', '-subj', '/CN=e2e CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign',
    '-out', 'ca.crt');
  key('server');
  run('req', '-new', '-key', 'server.key', '-subj', '/CN=127.0.0.1', '-out', 'server.csr');
  writeFileSync(join(dir, 'server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial',
    '-days', '1', '-sha256', '-extfile', 'server.ext', '-out', 'server.crt');
  return {
    cert: join(dir, 'server.crt'), key: join(dir, 'server.key'), caFile: join(dir, 'ca.crt'),
    caPem: readFileSync(join(dir, 'ca.crt'), 'utf8'),
  };
}

/** Runs lib/sdk_calls.js against the gateway with `env` added; its JSON outcome. */
function sdkCalls(env) {
  const out = execFileSync(process.execPath, [join(here, 'lib', 'sdk_calls.js'), fleet.url, gatewayKey],
    { env: { ...process.env, ...env }, cwd: here, timeout: 60000 });
  return JSON.parse(out.toString().trim().split('\n').pop());
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'troupe-e2e-tls-'));
  fleet = await startFleet({ tls: makeCerts() });
});

after(async () => {
  await fleet?.stop();
  if (dir) {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the gateway URL is https', () => {
  assert.match(fleet.url, /^https:\/\/127\.0\.0\.1:\d+$/);
});

test('OpenAI and Anthropic SDKs over HTTPS, trusting the CA with NODE_EXTRA_CA_CERTS', () => {
  const r = sdkCalls({ NODE_EXTRA_CA_CERTS: join(dir, 'ca.crt') });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.chat.object, 'chat.completion');
  assert.ok(r.chat.content.length > 0);
  assert.ok(r.stream_chunks > 0);
  assert.ok(r.models.includes('sim-model'));
  assert.equal(r.message.type, 'message');
  assert.equal(r.message.role, 'assistant');
  assert.ok(r.message.text.length > 0);
});

test('without trusting the CA the SDK refuses the certificate', () => {
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const out = execFileSync(process.execPath, [join(here, 'lib', 'sdk_calls.js'), fleet.url, gatewayKey],
    { env, cwd: here, timeout: 60000 });
  const r = JSON.parse(out.toString().trim().split('\n').pop());
  assert.equal(r.error?.name, 'APIConnectionError', JSON.stringify(r));
  assert.match(r.error.cause, /CERT|certificate|self.signed|UNABLE_TO/i);
});

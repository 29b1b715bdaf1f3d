// The official `@anthropic-ai/sdk` (1.x) against troupe in front of troupe-sim, with only the
// base URL changed: messages, streaming events, a tool_use round trip, typed errors.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic, { AuthenticationError, BadRequestError, NotFoundError } from '@anthropic-ai/sdk';

import { startFleet, gatewayKey } from './lib/fleet.js';

let fleet;
let client;

before(async () => {
  fleet = await startFleet({ model: 'claude-sim' });
  client = new Anthropic({ baseURL: fleet.url, apiKey: gatewayKey, maxRetries: 0 });
});

after(async () => {
  await fleet?.stop();
});

const model = 'claude-sim';
const weather = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

test('messages, non-streaming', async () => {
  const m = await client.messages.create({
    model, max_tokens: 8, messages: [{ role: 'user', content: 'Hello there' }],
  });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.model, model);
  assert.equal(m.content[0].type, 'text');
  assert.ok(m.content[0].text.length > 0);
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.ok(m.usage.output_tokens > 0);
});

test('messages, streaming: every event relayed in order', async () => {
  const stream = await client.messages.create({
    model, max_tokens: 5, stream: true, messages: [{ role: 'user', content: 'Hello there' }],
  });
  const types = [];
  let text = '';
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') {
      text += ev.delta.text;
    }
  }
  assert.equal(types[0], 'message_start');
  assert.equal(types[1], 'content_block_start');
  assert.ok(types.includes('content_block_delta'));
  assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
  assert.ok(text.length > 0);
});

test('messages, the SDK stream helper', async () => {
  let streamed = '';
  const final = await client.messages
    .stream({ model, max_tokens: 6, messages: [{ role: 'user', content: 'Hi' }] })
    .on('text', (t) => {
      streamed += t;
    })
    .finalMessage();
  assert.equal(final.content[0].text, streamed);
  assert.equal(final.usage.output_tokens, 6);
});

test('a tool_use round trip', async () => {
  const question = { role: 'user', content: 'What is the weather in Paris? Use get_weather.' };
  const first = await client.messages.create({
    model, max_tokens: 64, tools: [weather], messages: [question],
  });
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((b) => b.type === 'tool_use');
  assert.ok(use, JSON.stringify(first.content));
  assert.equal(use.name, 'get_weather');
  assert.match(use.id, /^toolu_/);
  assert.equal(typeof use.input.city, 'string');
  const second = await client.messages.create({
    model,
    max_tokens: 16,
    tools: [weather],
    messages: [
      question,
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 21 degrees' }],
      },
    ],
  });
  assert.notEqual(second.stop_reason, 'tool_use');
  assert.equal(second.content[0].type, 'text');
});

test('a streamed tool_use assembles its input from input_json_delta events', async () => {
  const final = await client.messages
    .stream({
      model,
      max_tokens: 64,
      tools: [weather],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
    })
    .finalMessage();
  assert.equal(final.stop_reason, 'tool_use');
  const use = final.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.equal(typeof use.input.city, 'string');
});

test('beta messages (?beta=true) are accepted', async () => {
  const m = await client.beta.messages.create({
    model, max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }],
    betas: ['token-efficient-tools-2025-02-19'],
  });
  assert.equal(m.type, 'message');
});

test('an unknown model is a NotFoundError', async () => {
  const e = await client.messages
    .create({ model: 'no-such-model', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] })
    .catch((err) => err);
  assert.ok(e instanceof NotFoundError, String(e));
  assert.equal(e.status, 404);
  assert.equal(e.error.type, 'error');
  assert.equal(e.error.error.type, 'not_found_error');
});

test('a request without max_tokens is a BadRequestError in Anthropic format', async () => {
  const e = await client.messages
    .create({ model, messages: [{ role: 'user', content: 'x' }] })
    .catch((err) => err);
  assert.ok(e instanceof BadRequestError, String(e));
  assert.equal(e.error.error.type, 'invalid_request_error');
  assert.equal(e.error.error.message, 'max_tokens: Field required');
  const empty = await client.messages
    .create({ model, max_tokens: 4, messages: [] })
    .catch((err) => err);
  assert.ok(empty instanceof BadRequestError, String(empty));
});

test('a wrong API key is an AuthenticationError', async () => {
  const bad = new Anthropic({ baseURL: fleet.url, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(
    bad.messages.create({ model, max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    AuthenticationError);
});

// The official `openai` SDK (6.x) against troupe in front of troupe-sim: every call is made
// exactly as an application would make it against api.openai.com, with only the base URL changed.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError } from 'openai';

import { startFleet, gatewayKey } from './lib/fleet.js';

let fleet;
let client;

before(async () => {
  // Two workers: stored responses must be found on the worker that created them.
  fleet = await startFleet({ workers: 2 });
  client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: gatewayKey, maxRetries: 0 });
});

after(async () => {
  await fleet?.stop();
});

const model = 'sim-model';
const messages = [{ role: 'user', content: 'Say something short.' }];

test('chat completion, non-streaming', async () => {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 8 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, model);
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.completion_tokens > 0);
});

test('chat completion, streaming', async () => {
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 6, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let chunks = 0;
  let finish = null;
  let usage = null;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      finish = c.finish_reason ?? finish;
    }
    usage = chunk.usage ?? usage;
  }
  assert.ok(chunks >= 3, `only ${chunks} chunks`);
  assert.ok(text.length > 0);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 6);
});

test('chat completion with a tool call', async () => {
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'What is the weather in Paris? Use get_weather.' }],
    tools: [{
      type: 'function',
      function: {
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
    }],
  });
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  const call = r.choices[0].message.tool_calls[0];
  assert.equal(call.function.name, 'get_weather');
  assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
});

test('completions', async () => {
  const r = await client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 5 });
  assert.equal(r.object, 'text_completion');
  assert.ok(r.choices[0].text.length > 0);
  const stream = await client.completions.create({
    model, prompt: 'Once upon a time', max_tokens: 4, stream: true,
  });
  let text = '';
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
  }
  assert.ok(text.length > 0);
});

test('embeddings', async () => {
  const r = await client.embeddings.create({ model, input: ['hello', 'world'] });
  assert.equal(r.object, 'list');
  assert.equal(r.data.length, 2);
  assert.ok(r.data[0].embedding.length > 0);
  assert.equal(typeof r.data[0].embedding[0], 'number');
});

test('models list and retrieve', async () => {
  const ids = [];
  for await (const m of client.models.list()) {
    assert.equal(m.object, 'model');
    assert.equal(m.owned_by, 'self_hosted');
    ids.push(m.id);
  }
  assert.deepEqual(ids, [model]);
  const m = await client.models.retrieve(model);
  assert.equal(m.id, model);
  await assert.rejects(client.models.retrieve('no-such-model'), NotFoundError);
});

test('responses: create, retrieve, input items, delete', async () => {
  const r = await client.responses.create({ model, input: 'Tell me a story.', max_output_tokens: 8 });
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.ok(r.output_text.length > 0);
  const again = await client.responses.retrieve(r.id);
  assert.equal(again.id, r.id);
  assert.equal(again.output_text, r.output_text);
  const items = [];
  for await (const item of client.responses.inputItems.list(r.id)) {
    items.push(item);
  }
  assert.ok(items.length >= 1);
  const next = await client.responses.create({
    model, input: 'And then?', previous_response_id: r.id, max_output_tokens: 4,
  });
  assert.equal(next.status, 'completed');
  await client.responses.delete(r.id);
  await assert.rejects(client.responses.retrieve(r.id), NotFoundError);
});

test('responses: streaming events', async () => {
  const stream = await client.responses.create({
    model, input: 'Tell me a story.', max_output_tokens: 5, stream: true,
  });
  const types = [];
  let text = '';
  let completed = null;
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === 'response.output_text.delta') {
      text += ev.delta;
    }
    if (ev.type === 'response.completed') {
      completed = ev.response;
    }
  }
  assert.equal(types[0], 'response.created');
  assert.ok(types.includes('response.output_text.delta'));
  assert.equal(types.at(-1), 'response.completed');
  assert.equal(completed.output_text ?? completed.output[0].content[0].text, text);
  // The SDK's stream helper assembles the final response from the same events.
  const final = await client.responses
    .stream({ model, input: 'Again.', max_output_tokens: 3 })
    .finalResponse();
  assert.equal(final.status, 'completed');
  const message = final.output.find((o) => o.type === 'message');
  assert.ok(message.content[0].text.length > 0);
});

test('an unknown model is a NotFoundError', async () => {
  const e = await client.chat.completions
    .create({ model: 'no-such-model', messages })
    .catch((err) => err);
  assert.ok(e instanceof NotFoundError, String(e));
  assert.equal(e.status, 404);
  assert.match(e.message, /no-such-model/);
});

test('a malformed body is a BadRequestError', async () => {
  const e = await client.chat.completions.create({ model }).catch((err) => err);
  assert.ok(e instanceof BadRequestError, String(e));
  assert.equal(e.status, 400);
  assert.match(e.message, /messages/);
  const e2 = await client.embeddings.create({ model, input: 42 }).catch((err) => err);
  assert.ok(e2 instanceof BadRequestError, String(e2));
});

test('a wrong API key is an AuthenticationError', async () => {
  const bad = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model, messages }), AuthenticationError);
});

// Run as a child process by https.test.js: the official SDKs make a few calls against the
// gateway at argv[2] exactly as an application would, and the outcome is printed as one JSON
// line. Run as a separate process because Node reads NODE_EXTRA_CA_CERTS (the test CA) only at
// start-up: the way an application trusts a private CA without a line of code changed.

import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [url, key] = process.argv.slice(2);
const out = {};
try {
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
  const messages = [{ role: 'user', content: 'Say something short.' }];
  const chat = await openai.chat.completions.create({ model: 'sim-model', messages, max_tokens: 6 });
  out.chat = { object: chat.object, content: chat.choices[0].message.content };
  const stream = await openai.chat.completions.create({
    model: 'sim-model', messages, max_tokens: 4, stream: true,
  });
  let chunks = 0;
  for await (const c of stream) {
    chunks += c.choices.length > 0 ? 1 : 0;
  }
  out.stream_chunks = chunks;
  out.models = (await openai.models.list()).data.map((m) => m.id);
  const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
  const msg = await anthropic.messages.create({ model: 'sim-model', max_tokens: 6, messages });
  out.message = { type: msg.type, role: msg.role, text: msg.content[0].text };
} catch (e) {
  // The reason sits at the end of the cause chain (APIConnectionError <- fetch <- TLS).
  const causes = [];
  for (let c = e.cause; c; c = c.cause) {
    causes.push(`${c.code ?? ''} ${c.message ?? ''}`.trim());
  }
  out.error = { name: e.constructor.name, message: String(e.message), cause: causes.join(' <- ') };
}
console.log(JSON.stringify(out));

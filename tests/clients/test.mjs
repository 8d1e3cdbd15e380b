// End-to-end tests of `loom serve` with the real npm clients (ollama 0.6.x, openai 7.x,
// @anthropic-ai/sdk 1.x).
// Run by tests/test_server_clients.c, which makes the test models, starts the server
// and writes the expected texts (from `loom run --temp 0`) into LOOM_TEST_EXPECT:
//   { "prompt": "...", "n": N, "greedy": "...", "stop": "...", "greedy_stop": "..." }
// Models: "stories" (stories260K, no chat template) and "tiny" (stories260K + a ChatML
// chat template). Prints one line per test; exits 1 if any failed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const url = process.env.LOOM_URL;
const expect = JSON.parse(readFileSync(process.env.LOOM_TEST_EXPECT, 'utf8'));
const ollama = new Ollama({ host: url });
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'ignored', maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: url, apiKey: 'ignored', maxRetries: 0 });
const greedy = { temperature: 0, num_predict: expect.n, seed: 42 };

let failed = 0, passed = 0;
async function test(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    passed++;
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

async function metric(name) {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n'))
    if (line.startsWith(name + '{') || line.startsWith(name + ' ')) sum += Number(line.split(' ').pop());
  return sum;
}

async function waitIdle() {
  for (let i = 0; i < 200; i++) {
    if ((await metric('loom_slots_active')) === 0 && (await metric('loom_queue_depth')) === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('slots still busy after 5 s');
}

const RFC3339NANO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$/;

await test('ollama list', async () => {
  const r = await ollama.list();
  const names = r.models.map((m) => m.name);
  assert.ok(names.includes('tiny:latest') && names.includes('stories:latest'), names.join(','));
  const m = r.models.find((x) => x.name === 'stories:latest');
  assert.equal(m.details.family, 'llama');
  assert.equal(m.details.format, 'gguf');
  assert.equal(m.details.quantization_level, 'F32');
  assert.match(m.digest, /^[0-9a-f]{64}$/);
  assert.equal(m.digest, expect.stories_sha256);
  assert.ok(m.size > 1000000);
});

await test('ollama show', async () => {
  const r = await ollama.show({ model: 'tiny' });
  assert.ok(r.template.includes('<|im_start|>'));
  assert.ok(r.capabilities.includes('completion'));
  assert.equal(r.model_info['general.architecture'], 'llama');
  assert.equal(r.details.family, 'llama');
  assert.ok(r.modelfile.includes('FROM '));
});

await test('ollama generate (not streaming) = loom run --temp 0', async () => {
  const r = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: greedy });
  assert.equal(r.response, expect.greedy);
  assert.equal(r.done, true);
  assert.equal(r.done_reason, 'length');
  assert.equal(r.eval_count, expect.n);
  assert.ok(r.prompt_eval_count > 0 && r.total_duration > 0 && r.eval_duration > 0);
  assert.ok(Array.isArray(r.context) && r.context.length === r.prompt_eval_count + expect.n);
  assert.match(String(r.created_at instanceof Date ? r.created_at.toISOString() : r.created_at), /^\d{4}-/);
});

await test('ollama generate (streaming) = loom run --temp 0', async () => {
  const parts = [];
  for await (const p of await ollama.generate({ model: 'stories', prompt: expect.prompt, options: greedy, stream: true })) parts.push(p);
  const last = parts.at(-1);
  assert.equal(last.done, true);
  assert.equal(last.done_reason, 'length');
  assert.equal(parts.filter((p) => p.done).length, 1);
  assert.equal(parts.map((p) => p.response).join(''), expect.greedy);
  assert.ok(parts.length >= 3);
  for (const p of parts) assert.match(typeof p.created_at === 'string' ? p.created_at : p.created_at.toISOString(), /Z$/);
});

await test('ollama generate: context continues the conversation', async () => {
  const a = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: { ...greedy, num_predict: 4 } });
  const b = await ollama.generate({ model: 'stories', prompt: ' and', context: a.context, options: { ...greedy, num_predict: 4 } });
  assert.deepEqual(b.context.slice(0, a.context.length), a.context);
  assert.ok(b.prompt_eval_count > a.context.length);
  // an empty prompt only loads the model (done_reason "load"), as Ollama does
  const c = await ollama.generate({ model: 'stories', prompt: '' });
  assert.equal(c.done_reason, 'load');
});

await test('ollama chat: streaming equals not streaming; role assistant', async () => {
  const msgs = [{ role: 'user', content: expect.prompt }];
  const whole = await ollama.chat({ model: 'tiny', messages: msgs, options: greedy });
  assert.equal(whole.message.role, 'assistant');
  assert.ok(whole.message.content.length > 0);
  const parts = [];
  for await (const p of await ollama.chat({ model: 'tiny', messages: msgs, options: greedy, stream: true })) parts.push(p);
  assert.equal(parts.map((p) => p.message.content).join(''), whole.message.content);
  assert.equal(parts.at(-1).done_reason, whole.done_reason);
  assert.equal(whole.eval_count, expect.n);
});

await test('seeded sampling is repeatable', async () => {
  const opt = { temperature: 1.0, top_k: 0, top_p: 1, seed: 1234, num_predict: expect.n };
  const a = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: opt });
  const b = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: opt });
  assert.equal(a.response, b.response);
});

await test('stop strings are cut and end with done_reason stop', async () => {
  const r = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: { ...greedy, stop: [expect.stop] } });
  assert.equal(r.response, expect.greedy_stop);
  assert.equal(r.done_reason, 'stop');
  const parts = [];
  const it = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: { ...greedy, stop: [expect.stop] }, stream: true });
  for await (const p of it) parts.push(p);
  assert.equal(parts.map((p) => p.response).join(''), expect.greedy_stop);
  // Ollama's OpenAPI reference: options.stop is a string or an array of strings
  const one = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: { ...greedy, stop: expect.stop } });
  assert.equal(one.response, expect.greedy_stop);
  assert.equal(one.done_reason, 'stop');
});

await test('abort mid-stream frees the slot; the next request works', async () => {
  const it = await ollama.generate({ model: 'stories', prompt: expect.prompt, stream: true,
                                     options: { temperature: 0, num_predict: 100000, num_ctx: 2048 } });
  let n = 0;
  try {
    for await (const p of it) { if (++n === 3) it.abort(); }
  } catch (e) {
    assert.equal(e.name, 'AbortError');
  }
  await waitIdle();
  const r = await ollama.generate({ model: 'stories', prompt: expect.prompt, options: greedy });
  assert.equal(r.response, expect.greedy);
});

await test('unknown model: 404 "not found"', async () => {
  await assert.rejects(ollama.generate({ model: 'no-such-model', prompt: 'hi' }), (e) => {
    assert.equal(e.status_code, 404);
    assert.match(e.error, /model 'no-such-model' not found/);
    return true;
  });
  await assert.rejects(ollama.show({ model: 'no-such-model' }), (e) => e.status_code === 404);
});

await test('bad JSON and bad fields: 400 with a message', async () => {
  let r = await fetch(`${url}/api/generate`, { method: 'POST', body: '{"model": ' });
  assert.equal(r.status, 400);
  assert.match((await r.json()).error, /invalid JSON/);
  r = await fetch(`${url}/api/chat`, { method: 'POST', body: JSON.stringify({ model: 'tiny', messages: 'x' }) });
  assert.equal(r.status, 400);
  assert.match((await r.json()).error, /messages/);
  r = await fetch(`${url}/api/generate`, { method: 'POST', body: JSON.stringify({ model: 'stories', prompt: 'x', options: { num_predict: 'many' } }) });
  assert.equal(r.status, 400);
  assert.match((await r.json()).error, /num_predict/);
  await assert.rejects(ollama.generate({ model: '../../etc/passwd', prompt: 'x' }), (e) => e.status_code === 400);
});

await test('ollama ps and version', async () => {
  const ps = await ollama.ps();
  assert.ok(ps.models.some((m) => m.name === 'stories:latest'));
  const m = ps.models.find((x) => x.name === 'stories:latest');
  assert.ok(m.size > 0 && m.context_length > 0);
  const v = await (await fetch(`${url}/api/version`)).json();
  assert.match(v.version, /^\d+\.\d+\.\d+/);
});

// Embeddings: the synthetic bert "embed"; expect.embed_ref holds llama.cpp's pooled
// vectors of expect.embed_texts (normalized). openai-node asks for base64 unless told.
function cosine(a, b) {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
}

await test('embeddings: ollama embed / embeddings, openai base64 and float = llama.cpp', async () => {
  const texts = expect.embed_texts, ref = expect.embed_ref, E = ref[0].length;
  const r = await ollama.embed({ model: 'embed', input: texts });
  assert.equal(r.model, 'embed');
  assert.equal(r.embeddings.length, texts.length);
  assert.ok(r.prompt_eval_count > texts.length);
  for (let i = 0; i < texts.length; i++) {
    assert.equal(r.embeddings[i].length, E);
    assert.ok(Math.abs(Math.hypot(...r.embeddings[i]) - 1) < 1e-5);
    assert.ok(cosine(r.embeddings[i], ref[i]) > 0.9999, `text ${i}: cosine ${cosine(r.embeddings[i], ref[i])}`);
  }
  const one = await ollama.embed({ model: 'embed', input: texts[1] });
  assert.equal(one.embeddings.length, 1);
  assert.ok(cosine(one.embeddings[0], ref[1]) > 0.9999);
  const legacy = await ollama.embeddings({ model: 'embed', prompt: texts[0] });
  assert.equal(legacy.embedding.length, E);
  assert.ok(cosine(legacy.embedding, ref[0]) > 0.9999);
  const b64 = await openai.embeddings.create({ model: 'embed', input: texts });
  const flt = await openai.embeddings.create({ model: 'embed', input: texts, encoding_format: 'float' });
  assert.equal(b64.object, 'list');
  assert.equal(b64.data.length, texts.length);
  assert.ok(b64.usage.prompt_tokens > texts.length && b64.usage.total_tokens === b64.usage.prompt_tokens);
  for (let i = 0; i < texts.length; i++) {
    assert.equal(b64.data[i].index, i);
    assert.equal(b64.data[i].embedding.length, E);
    // base64 carries the float32s themselves; the float list prints them in JSON
    for (let j = 0; j < E; j++) assert.ok(Math.abs(b64.data[i].embedding[j] - flt.data[i].embedding[j]) < 1e-7);
    assert.ok(cosine(b64.data[i].embedding, ref[i]) > 0.9999);
  }
  const cut = await openai.embeddings.create({ model: 'embed', input: texts[2], dimensions: 8, encoding_format: 'float' });
  assert.equal(cut.data[0].embedding.length, 8);
  assert.ok(Math.abs(Math.hypot(...cut.data[0].embedding) - 1) < 1e-5);
  await assert.rejects(ollama.embed({ model: 'tiny', input: 'x' }), /does not support embeddings/);
});

await test('structured output: ollama format (schema) and openai response_format', async () => {
  const schema = { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] }, n: { type: 'integer', minimum: 1, maximum: 9 } },
                   required: ['color', 'n'] };
  const o = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'pick' }], format: schema, options: { seed: 5 } });
  const v = JSON.parse(o.message.content);
  assert.ok(['red', 'green', 'blue'].includes(v.color) && Number.isInteger(v.n) && v.n >= 1 && v.n <= 9, o.message.content);
  assert.equal(o.done_reason, 'stop');
  const c = await openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'pick' }], seed: 5,
    response_format: { type: 'json_schema', json_schema: { name: 'pick', schema } } });
  const w = JSON.parse(c.choices[0].message.content);
  assert.ok(['red', 'green', 'blue'].includes(w.color) && Number.isInteger(w.n), c.choices[0].message.content);
  await assert.rejects(ollama.generate({ model: 'tiny', prompt: 'x', format: { type: 'array', uniqueItems: true } }),
                       (e) => e.status_code === 400 && /uniqueItems/.test(e.error));
});

await test('openai models.list', async () => {
  const ids = [];
  for await (const m of openai.models.list()) ids.push(m.id);
  assert.ok(ids.includes('tiny:latest') && ids.includes('stories:latest'), ids.join(','));
});

await test('openai chat.completions (not streaming) = ollama chat', async () => {
  const msgs = [{ role: 'user', content: expect.prompt }];
  const c = await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: expect.n, seed: 42 });
  assert.equal(c.object, 'chat.completion');
  assert.equal(c.choices[0].message.role, 'assistant');
  assert.equal(c.choices[0].finish_reason, 'length');
  assert.strictEqual(c.choices[0].logprobs, null); // required by the API reference, null when not asked
  assert.equal(c.usage.completion_tokens, expect.n);
  assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  const o = await ollama.chat({ model: 'tiny', messages: msgs, options: greedy });
  assert.equal(c.choices[0].message.content, o.message.content);
});

await test('openai chat.completions (streaming, include_usage)', async () => {
  const msgs = [{ role: 'user', content: expect.prompt }];
  const whole = await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: expect.n });
  const stream = await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: expect.n,
                                                         stream: true, stream_options: { include_usage: true } });
  let text = '', usage = null, finish = null, chunks = 0, roles = 0;
  for await (const ch of stream) {
    chunks++;
    assert.equal(ch.object, 'chat.completion.chunk');
    if (ch.usage) { usage = ch.usage; assert.equal(ch.choices.length, 0); continue; }
    const d = ch.choices[0].delta;
    if (d.role) roles++;
    if (d.content) text += d.content;
    if (ch.choices[0].finish_reason) finish = ch.choices[0].finish_reason;
  }
  assert.equal(text, whole.choices[0].message.content);
  assert.equal(finish, 'length');
  assert.equal(roles, 1);
  assert.ok(usage && usage.completion_tokens === expect.n && usage.prompt_tokens > 0);
  assert.ok(chunks >= 3);
});

await test('openai completions = loom run --temp 0', async () => {
  const c = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: expect.n });
  assert.equal(c.choices[0].text, expect.greedy);
  assert.equal(c.object, 'text_completion');
  const s = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: expect.n, stream: true });
  let text = '';
  for await (const ch of s) text += ch.choices[0]?.text ?? '';
  assert.equal(text, expect.greedy);
  const st = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: expect.n, stop: expect.stop });
  assert.equal(st.choices[0].text, expect.greedy_stop);
  assert.equal(st.choices[0].finish_reason, 'stop');
});

await test('openai logit_bias: +100 makes a token the only choice, -100 bans it', async () => {
  // the tokens (ids and texts) of the greedy answer from ollama: one streamed part per token,
  // and the final context = prompt ids + answer ids
  const parts = [];
  let ctx = null;
  for await (const p of await ollama.generate({ model: 'stories', prompt: expect.prompt, raw: true, stream: true,
                                                 options: { ...greedy, num_predict: 3 } })) {
    if (p.done) ctx = p.context; else parts.push(p.response);
  }
  assert.equal(parts.length, 3);
  const ids = ctx.slice(ctx.length - 3);
  const forced = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: 3,
                                                   logit_bias: { [ids[1]]: 100 } });
  assert.equal(forced.choices[0].text, parts[1].repeat(3));
  const chat = await openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], max_tokens: 2,
                                                      logit_bias: { [ids[1]]: 100 } });
  assert.equal(chat.choices[0].message.content, parts[1].repeat(2));
  const plain = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: 1 });
  assert.equal(plain.choices[0].text, parts[0]);
  const banned = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: 1,
                                                   logit_bias: { [ids[0]]: -100 } });
  assert.notEqual(banned.choices[0].text, parts[0]);
  await assert.rejects(openai.completions.create({ model: 'stories', prompt: 'x', logit_bias: { 1000000: 1 } }),
                       (e) => e instanceof OpenAI.BadRequestError && /logit_bias/.test(e.message));
});

await test('openai errors: unknown model is NotFoundError, bad request is BadRequestError', async () => {
  await assert.rejects(openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /not found/.test(e.message) &&
                              e.code === 'model_not_found');
  // a prompt over the context: OpenAI's code and param, which clients test to trim a conversation
  const long = 'word '.repeat(4000);
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: long }] }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded' && e.param === 'messages');
  await assert.rejects(openai.completions.create({ model: 'stories', prompt: long }),
                       (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded' && e.param === 'prompt');
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: [] }),
                       (e) => e instanceof OpenAI.BadRequestError && e.status === 400);
  // token log probabilities: at most 20 alternatives; top_logprobs needs logprobs (OpenAI)
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], logprobs: true, top_logprobs: 21 }),
                       (e) => e instanceof OpenAI.BadRequestError && /top_logprobs/.test(e.message));
  await assert.rejects(openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }),
                       (e) => e instanceof OpenAI.BadRequestError && /logprobs/.test(e.message));
  await assert.rejects(ollama.generate({ model: 'stories', prompt: 'x', logprobs: true, top_logprobs: 99 }),
                       (e) => e.status_code === 400 && /top_logprobs/.test(e.error));
});

// ---- token log probabilities: the model's log-softmax at each generated position,
// checked against `loom eval`'s logits (a separate process, the whole sequence in one
// batch) turned into log-softmax here in float64 (measured difference 2.7e-7: the
// float32 rounding of the logits and of the reported value).
function evalLogits(ids) {
  const out = join(tmpdir(), `loom-lp-${process.pid}.bin`);
  execFileSync(process.env.LOOM_BIN, ['eval', 'models/stories260K.gguf', '--tokens', ids.join(','), '--out', out, '-t', '1']);
  const b = readFileSync(out);
  unlinkSync(out);
  const [n, v] = [b.readInt32LE(0), b.readInt32LE(4)];
  const rows = [];
  for (let i = 0; i < n; i++) {
    const row = new Float64Array(v);
    for (let j = 0; j < v; j++) row[j] = b.readFloatLE(8 + 4 * (i * v + j));
    let mx = -Infinity, s = 0;
    for (const x of row) mx = Math.max(mx, x);
    for (const x of row) s += Math.exp(x - mx);
    const lse = mx + Math.log(s);
    rows.push(row.map((x) => x - lse));
  }
  return rows;
}

await test('logprobs: ollama generate = log-softmax of loom eval logits; streamed = whole', async () => {
  const args = { model: 'stories', prompt: expect.prompt, raw: true, logprobs: true, top_logprobs: 3,
                 options: { temperature: 0, num_predict: 12 } };
  const r = await ollama.generate(args);
  assert.equal(r.logprobs.length, r.eval_count);
  assert.equal(r.logprobs.map((l) => l.token).join(''), r.response);
  const nPrompt = r.context.length - r.eval_count;
  const ref = evalLogits(r.context);
  let maxErr = 0;
  r.logprobs.forEach((l, k) => {
    const id = r.context[nPrompt + k], row = ref[nPrompt + k - 1];
    maxErr = Math.max(maxErr, Math.abs(l.logprob - row[id]));
    assert.deepEqual(Buffer.from(l.bytes).toString('utf8'), l.token);
    // greedy: the chosen token is the most likely; the alternatives are the 3 best, in order
    const best = [...row.keys()].sort((a, b) => row[b] - row[a]).slice(0, 3);
    assert.equal(l.top_logprobs.length, 3);
    assert.equal(l.top_logprobs[0].token, l.token);
    l.top_logprobs.forEach((t, i) => maxErr = Math.max(maxErr, Math.abs(t.logprob - row[best[i]])));
  });
  assert.ok(maxErr < 2e-6, `max |logprob - reference| = ${maxErr}`);
  const parts = [];
  for await (const p of await ollama.generate({ ...args, stream: true })) parts.push(...(p.logprobs ?? []));
  assert.deepEqual(parts, r.logprobs);
});

await test('logprobs: openai completions and chat (whole and streamed)', async () => {
  const o = await ollama.generate({ model: 'stories', prompt: expect.prompt, raw: true, logprobs: true,
                                    options: { temperature: 0, num_predict: 10 } });
  const c = await openai.completions.create({ model: 'stories', prompt: expect.prompt, temperature: 0, max_tokens: 10, logprobs: 2 });
  const lp = c.choices[0].logprobs;
  assert.deepEqual(lp.tokens, o.logprobs.map((l) => l.token));
  assert.deepEqual(lp.token_logprobs, o.logprobs.map((l) => l.logprob));
  assert.equal(lp.tokens.join(''), c.choices[0].text);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  assert.ok(lp.top_logprobs.every((t, i) => Object.keys(t).length === 2 && t[lp.tokens[i]] === lp.token_logprobs[i]));
  let off = 0;
  lp.text_offset.forEach((x, i) => { assert.equal(x, off); off += [...lp.tokens[i]].length; });
  const msgs = [{ role: 'user', content: expect.prompt }];
  const ch = await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: 10, logprobs: true, top_logprobs: 2 });
  const content = ch.choices[0].logprobs.content;
  assert.equal(content.length, ch.usage.completion_tokens);
  assert.equal(content.map((t) => t.token).join(''), ch.choices[0].message.content);
  assert.ok(content.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0 && t.top_logprobs[0].logprob >= t.logprob));
  const streamed = [];
  for await (const k of await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: 10,
                                                              logprobs: true, top_logprobs: 2, stream: true }))
    streamed.push(...(k.choices[0]?.logprobs?.content ?? []));
  assert.deepEqual(streamed, content);
  const plain = await openai.chat.completions.create({ model: 'tiny', messages: msgs, temperature: 0, max_tokens: 2 });
  assert.strictEqual(plain.choices[0].logprobs, null);
  // the Responses API: on the output_text part, its deltas and its done event
  const rargs = { model: 'tiny', input: expect.prompt, temperature: 0, max_output_tokens: 10, top_logprobs: 2,
                  include: ['message.output_text.logprobs'] };
  const r = await openai.responses.create(rargs);
  const part = r.output[0].content[0];
  assert.deepEqual(part.logprobs, content);
  assert.equal(r.top_logprobs, 2);
  const evs = [];
  for await (const e of await openai.responses.create({ ...rargs, stream: true })) evs.push(e);
  assert.deepEqual(evs.filter((e) => e.type === 'response.output_text.delta').flatMap((e) => e.logprobs), content);
  assert.deepEqual(evs.find((e) => e.type === 'response.output_text.done').logprobs, content);
});

await test('openai stream abort frees the slot', async () => {
  const ac = new AbortController();
  const stream = await openai.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: expect.prompt }],
                                                         temperature: 0, max_tokens: 100000, stream: true }, { signal: ac.signal });
  let n = 0;
  try {
    for await (const ch of stream) { if (++n === 3) ac.abort(); }
  } catch (e) {
    assert.ok(e.name === 'AbortError' || e instanceof OpenAI.APIUserAbortError, String(e));
  }
  await waitIdle();
});

await test('concurrent streams give their solo greedy answers', async () => {
  const prompts = expect.concurrent_prompts;
  const solo = [];
  for (const p of prompts) solo.push((await ollama.generate({ model: 'stories', prompt: p, options: greedy })).response);
  const together = await Promise.all(prompts.map(async (p) => {
    let t = '';
    for await (const part of await ollama.generate({ model: 'stories', prompt: p, options: greedy, stream: true })) t += part.response;
    return t;
  }));
  assert.deepEqual(together, solo);
  await waitIdle();
});

// ---- tool calls and thinking (issue #24): "qwen3" = stories260K + Qwen3's template
// (Hermes-style <tool_call>, <think>), "r1" = stories260K + DeepSeek-R1's (the answer
// starts inside <think> unless thinking is off).
const weatherSchema = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 12 }, unit: { enum: ['celsius', 'fahrenheit'] },
                days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'unit'], additionalProperties: false,
};
const tools = [{ type: 'function', function: { name: 'get_weather', description: 'Weather of a city', parameters: weatherSchema } }];
const ask = [{ role: 'user', content: 'What is the weather in Paris?' }];

// The schema above, checked by hand (the HTTP test checks with Python's jsonschema).
function assertWeatherArgs(a) {
  assert.equal(typeof a, 'object');
  for (const k of Object.keys(a)) assert.ok(['city', 'unit', 'days'].includes(k), `unexpected property ${k}`);
  assert.equal(typeof a.city, 'string');
  assert.ok([...a.city].length <= 12, a.city);
  assert.ok(['celsius', 'fahrenheit'].includes(a.unit), String(a.unit));
  if (a.days !== undefined) assert.ok(Number.isInteger(a.days) && a.days >= 1 && a.days <= 7, String(a.days));
}

await test('openai tools: tool_choice required gives a valid call; the turn with its result runs', async () => {
  const c = await openai.chat.completions.create({ model: 'qwen3', messages: ask, tools, tool_choice: 'required',
    parallel_tool_calls: false, seed: 3, temperature: 0.9, max_tokens: 160 });
  const ch = c.choices[0];
  assert.equal(ch.finish_reason, 'tool_calls');
  assert.equal(ch.message.tool_calls.length, 1);
  const call = ch.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'get_weather');
  assert.match(call.id, /^call_/);
  assert.equal(typeof call.function.arguments, 'string');
  assertWeatherArgs(JSON.parse(call.function.arguments));
  const next = await openai.chat.completions.create({ model: 'qwen3', tools, temperature: 0, max_tokens: 8,
    messages: [...ask, ch.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 24 degrees' }] });
  assert.equal(next.choices[0].message.role, 'assistant');
  assert.ok(next.usage.prompt_tokens > c.usage.prompt_tokens + 10, `${next.usage.prompt_tokens} vs ${c.usage.prompt_tokens}`);
});

await test('openai tools streaming: tool_calls deltas with index and id, no call syntax as text', async () => {
  const stream = await openai.chat.completions.create({ model: 'qwen3', messages: ask, tools, tool_choice: 'required',
    parallel_tool_calls: false, seed: 4, temperature: 0.9, max_tokens: 160, stream: true });
  const calls = [];
  let finish = null, text = '';
  for await (const ch of stream) {
    const d = ch.choices[0]?.delta ?? {};
    if (d.content) text += d.content;
    for (const t of d.tool_calls ?? []) {
      if (!calls[t.index]) calls[t.index] = { id: t.id, name: '', args: '' };
      if (t.id) assert.equal(t.id, calls[t.index].id);
      calls[t.index].name += t.function?.name ?? '';
      calls[t.index].args += t.function?.arguments ?? '';
    }
    if (ch.choices[0]?.finish_reason) finish = ch.choices[0].finish_reason;
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_weather');
  assertWeatherArgs(JSON.parse(calls[0].args));
  assert.ok(!text.includes('<tool_call') && !text.includes('{'), text);
});

await test('ollama tools: message.tool_calls (tool_choice is Loom\'s extension); the turn with the result runs', async () => {
  const r = await ollama.chat({ model: 'qwen3', messages: ask, tools, tool_choice: 'required', parallel_tool_calls: false,
    options: { seed: 3, temperature: 0.9, num_predict: 160 } });
  assert.equal(r.done_reason, 'stop');
  assert.equal(r.message.tool_calls.length, 1);
  const f = r.message.tool_calls[0].function;
  assert.equal(f.name, 'get_weather');
  assertWeatherArgs(f.arguments);
  const next = await ollama.chat({ model: 'qwen3', tools, options: { temperature: 0, num_predict: 8 },
    messages: [...ask, r.message, { role: 'tool', content: 'sunny, 24 degrees', tool_name: 'get_weather' }] });
  assert.equal(next.message.role, 'assistant');
  assert.ok(next.prompt_eval_count > r.prompt_eval_count + 10);
  // streamed: the call arrives whole in one chunk
  const parts = [];
  for await (const p of await ollama.chat({ model: 'qwen3', messages: ask, tools, tool_choice: 'required',
    parallel_tool_calls: false, stream: true, options: { seed: 3, temperature: 0.9, num_predict: 160 } })) parts.push(p);
  const streamed = parts.flatMap((p) => p.message.tool_calls ?? []);
  assert.deepEqual(streamed.map((c) => c.function), r.message.tool_calls.map((c) => c.function));
  assert.ok(parts.every((p) => !p.message.content.includes('<tool')));
});

await test('ollama think: true returns message.thinking, false hides it', async () => {
  const msgs = [{ role: 'user', content: 'Tell me a story.' }];
  const opt = { temperature: 0, num_predict: 16 };
  const t = await ollama.chat({ model: 'r1', messages: msgs, think: true, options: opt });
  assert.ok(t.message.thinking && t.message.thinking.length > 0, JSON.stringify(t.message));
  const parts = [];
  for await (const p of await ollama.chat({ model: 'r1', messages: msgs, think: true, options: opt, stream: true })) parts.push(p);
  assert.equal(parts.map((p) => p.message.thinking ?? '').join(''), t.message.thinking);
  assert.equal(parts.map((p) => p.message.content).join(''), t.message.content);
  const f = await ollama.chat({ model: 'r1', messages: msgs, think: false, options: opt });
  assert.ok(!f.message.thinking, JSON.stringify(f.message));
  assert.ok(f.message.content.length > 0);
  const q = await ollama.chat({ model: 'qwen3', messages: msgs, think: false, options: opt });
  assert.ok(!q.message.thinking && q.message.content.length > 0);
  // OpenAI: reasoning_content
  const o = await openai.chat.completions.create({ model: 'r1', messages: msgs, temperature: 0, max_tokens: 16 });
  assert.equal(o.choices[0].message.reasoning_content, t.message.thinking);
});

// ---- OpenAI's Responses API (/v1/responses, stateless as Ollama serves it): the same
// conversation as chat.completions gives the same prompt and, greedy, the same text; the
// SDK's own stream accumulator (responses.stream) checks the event sequence.
const respTools = [{ type: 'function', name: 'get_weather', description: 'Weather of a city', parameters: weatherSchema, strict: false }];

function checkEvents(events) {
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[1].type, 'response.in_progress');
  assert.ok(['response.completed', 'response.incomplete'].includes(events.at(-1).type), events.at(-1).type);
  events.forEach((e, i) => assert.equal(e.sequence_number, i));
  const added = events.filter((e) => e.type === 'response.output_item.added').map((e) => e.item.id);
  const done = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item.id);
  assert.deepEqual(added, done);
  assert.deepEqual(events.at(-1).response.output.map((o) => o.id), done);
}

await test('openai responses (not streaming) = chat.completions', async () => {
  const r = await openai.responses.create({ model: 'tiny', instructions: 'Be brief.', input: expect.prompt,
    temperature: 0, max_output_tokens: expect.n });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.instructions, 'Be brief.');
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.usage.output_tokens, expect.n);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  const c = await openai.chat.completions.create({ model: 'tiny', temperature: 0, max_tokens: expect.n,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: expect.prompt }] });
  assert.equal(r.output_text, c.choices[0].message.content);
  assert.equal(r.usage.input_tokens, c.usage.prompt_tokens);
  // a message list (developer = system; parts joined) renders the same prompt
  const m = await openai.responses.create({ model: 'tiny', temperature: 0, max_output_tokens: expect.n,
    input: [{ role: 'developer', content: 'Be brief.' },
            { type: 'message', role: 'user', content: [{ type: 'input_text', text: expect.prompt.slice(0, 5) },
                                                        { type: 'input_text', text: expect.prompt.slice(5) }] }] });
  assert.equal(m.output_text, r.output_text);
  assert.equal(m.usage.input_tokens, r.usage.input_tokens);
});

await test('openai responses streaming: the SDK accumulator, raw events, = not streaming', async () => {
  const args = { model: 'tiny', input: expect.prompt, temperature: 0, max_output_tokens: expect.n };
  const whole = await openai.responses.create(args);
  const st = openai.responses.stream(args);
  let deltas = '';
  st.on('response.output_text.delta', (e) => { deltas += e.delta; });
  const fin = await st.finalResponse();
  assert.equal(fin.output_text, whole.output_text);
  assert.equal(deltas, whole.output_text);
  assert.equal(fin.status, 'incomplete');
  const events = [];
  for await (const e of await openai.responses.create({ ...args, stream: true })) events.push(e);
  checkEvents(events);
  assert.equal(events.at(-1).type, 'response.incomplete');
  assert.equal(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''), whole.output_text);
  assert.equal(events.at(-1).response.usage.output_tokens, expect.n);
});

await test('openai responses tools: a function_call item; its output in the next turn = chat.completions', async () => {
  const ask1 = 'What is the weather in Paris?';
  const r = await openai.responses.create({ model: 'qwen3', input: ask1, tools: respTools, tool_choice: 'required',
    parallel_tool_calls: false, seed: 3, temperature: 0.9, max_output_tokens: 160 });
  assert.equal(r.status, 'completed');
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].name, 'get_weather');
  assert.match(calls[0].call_id, /^call_/);
  assert.match(calls[0].id, /^fc_/);
  assertWeatherArgs(JSON.parse(calls[0].arguments));
  // streamed: the SDK accumulator's final response has the same call
  const st = openai.responses.stream({ model: 'qwen3', input: ask1, tools: respTools, tool_choice: 'required',
    parallel_tool_calls: false, seed: 3, temperature: 0.9, max_output_tokens: 160 });
  const fin = await st.finalResponse();
  const sc = fin.output.filter((o) => o.type === 'function_call');
  assert.deepEqual(sc.map((c) => [c.name, c.arguments]), calls.map((c) => [c.name, c.arguments]));
  // the next turn: the call and its output, as chat.completions messages
  const next = await openai.responses.create({ model: 'qwen3', tools: respTools, temperature: 0, max_output_tokens: 8,
    input: [{ role: 'user', content: ask1 }, ...r.output,
            { type: 'function_call_output', call_id: calls[0].call_id, output: 'sunny, 24 degrees' }] });
  const chat = await openai.chat.completions.create({ model: 'qwen3', tools, temperature: 0, max_tokens: 8,
    messages: [{ role: 'user', content: ask1 },
               { role: 'assistant', content: null, tool_calls: [{ id: calls[0].call_id, type: 'function',
                 function: { name: 'get_weather', arguments: calls[0].arguments } }] },
               { role: 'tool', tool_call_id: calls[0].call_id, content: 'sunny, 24 degrees' }] });
  assert.equal(next.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(next.output_text, chat.choices[0].message.content);
  assert.ok(next.usage.input_tokens > r.usage.input_tokens + 10);
});

await test('openai responses custom tools: a custom_tool_call with text input; its output in the next turn', async () => {
  const ctools = [{ type: 'custom', name: 'note', description: 'Write a note' }];
  const args = { model: 'qwen3', input: 'Note that it is sunny.', tools: ctools, tool_choice: { type: 'custom', name: 'note' },
                 parallel_tool_calls: false,
                 seed: 5, temperature: 0.9, max_output_tokens: 120 };
  const r = await openai.responses.create(args);
  assert.equal(r.status, 'completed');
  const calls = r.output.filter((o) => o.type === 'custom_tool_call');
  assert.equal(calls.length, 1, JSON.stringify(r.output));
  assert.deepEqual(r.output.map((o) => o.type), ['custom_tool_call'], JSON.stringify(r.output));
  assert.equal(calls[0].name, 'note');
  assert.match(calls[0].id, /^ctc_/);
  assert.equal(typeof calls[0].input, 'string');
  const fin = await openai.responses.stream(args).finalResponse();
  assert.deepEqual(fin.output.filter((o) => o.type === 'custom_tool_call').map((o) => o.input), [calls[0].input]);
  // the next turn = chat.completions with the same call as a function of one string
  const next = await openai.responses.create({ model: 'qwen3', tools: ctools, temperature: 0, max_output_tokens: 8,
    input: [{ role: 'user', content: 'Note that it is sunny.' }, ...r.output,
            { type: 'custom_tool_call_output', call_id: calls[0].call_id, output: 'saved' }] });
  const chat = await openai.chat.completions.create({ model: 'qwen3', temperature: 0, max_tokens: 8,
    tools: [{ type: 'function', function: { name: 'note', description: 'Write a note',
              parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] } } }],
    messages: [{ role: 'user', content: 'Note that it is sunny.' },
               { role: 'assistant', content: null, tool_calls: [{ id: calls[0].call_id, type: 'function',
                 function: { name: 'note', arguments: JSON.stringify({ input: calls[0].input }) } }] },
               { role: 'tool', tool_call_id: calls[0].call_id, content: 'saved' }] });
  assert.equal(next.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(next.output_text, chat.choices[0].message.content ?? '');
});

await test('openai responses reasoning: a reasoning item = chat reasoning_content; effort none hides it', async () => {
  const args = { model: 'r1', input: 'Tell me a story.', temperature: 0, max_output_tokens: 16 };
  const r = await openai.responses.create(args);
  const c = await openai.chat.completions.create({ model: 'r1', messages: [{ role: 'user', content: 'Tell me a story.' }],
    temperature: 0, max_tokens: 16 });
  const rs = r.output.filter((o) => o.type === 'reasoning');
  assert.equal(rs.length, 1);
  assert.match(rs[0].id, /^rs_/);
  assert.equal(rs[0].summary.map((s) => s.text).join(''), c.choices[0].message.reasoning_content);
  const events = [];
  for await (const e of await openai.responses.create({ ...args, stream: true })) events.push(e);
  checkEvents(events);
  assert.equal(events.filter((e) => e.type === 'response.reasoning_summary_text.delta').map((e) => e.delta).join(''),
               c.choices[0].message.reasoning_content);
  const fin = await openai.responses.stream(args).finalResponse();
  assert.deepEqual(fin.output.map((o) => o.type), r.output.map((o) => o.type));
  const off = await openai.responses.create({ ...args, reasoning: { effort: 'none' } });
  assert.ok(off.output.every((o) => o.type !== 'reasoning'), JSON.stringify(off.output));
  assert.equal(off.reasoning.effort, 'none');
  // an effort for a model that cannot think: answered without reasoning (not a 400)
  const tiny = await openai.responses.create({ ...args, model: 'tiny', reasoning: { effort: 'high' } });
  assert.deepEqual(tiny.output.map((o) => o.type), ['message']);
});

await test('openai responses: text.format json_schema; stateful fields and unknown models are errors', async () => {
  const schema = { type: 'object', properties: { color: { enum: ['red', 'green', 'blue'] } }, required: ['color'],
                   additionalProperties: false };
  const r = await openai.responses.create({ model: 'tiny', input: 'pick', seed: 5,
    text: { format: { type: 'json_schema', name: 'pick', schema, strict: true } } });
  assert.ok(['red', 'green', 'blue'].includes(JSON.parse(r.output_text).color), r.output_text);
  assert.equal(r.text.format.type, 'json_schema');
  await assert.rejects(openai.responses.create({ model: 'tiny', input: 'x', previous_response_id: 'resp_123' }),
                       (e) => e instanceof OpenAI.BadRequestError && /stateful/.test(e.message));
  await assert.rejects(openai.responses.create({ model: 'tiny', input: [{ type: 'web_search_call', id: 'x' }] }),
                       (e) => e instanceof OpenAI.BadRequestError && /input\[0\]/.test(e.message));
  await assert.rejects(openai.responses.create({ model: 'nope', input: 'x' }),
                       (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
});

// ---- Anthropic's Messages API (/v1/messages, as Ollama serves it for Claude Code): the
// same conversation as chat.completions gives the same prompt and, greedy, the same text;
// the SDK's MessageStream accumulates the stream.
function chatFromBlocks(blocks) { // an assistant turn's blocks as a chat.completions message
  const m = { role: 'assistant', content: blocks.filter((b) => b.type === 'text').map((b) => b.text).join('') || null };
  const th = blocks.filter((b) => b.type === 'thinking').map((b) => b.thinking).join('');
  if (th) m.reasoning_content = th;
  const calls = blocks.filter((b) => b.type === 'tool_use');
  if (calls.length) m.tool_calls = calls.map((b) => ({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input) } }));
  return m;
}

await test('anthropic messages (not streaming) = chat.completions; stop_sequences', async () => {
  const m = await anthropic.messages.create({ model: 'tiny', system: 'Be brief.', max_tokens: expect.n, temperature: 0,
    messages: [{ role: 'user', content: expect.prompt }] });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.match(m.id, /^msg_/);
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.stop_sequence, null);
  assert.equal(m.content.length, 1);
  assert.equal(m.content[0].type, 'text');
  assert.equal(m.usage.output_tokens, expect.n);
  const c = await openai.chat.completions.create({ model: 'tiny', temperature: 0, max_tokens: expect.n,
    messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: expect.prompt }] });
  assert.equal(m.content[0].text, c.choices[0].message.content);
  assert.equal(m.usage.input_tokens, c.usage.prompt_tokens);
  // system as text blocks and the user turn as blocks: the same prompt
  const b = await anthropic.messages.create({ model: 'tiny', max_tokens: expect.n, temperature: 0,
    system: [{ type: 'text', text: 'Be ' }, { type: 'text', text: 'brief.' }],
    messages: [{ role: 'user', content: [{ type: 'text', text: expect.prompt }] }] });
  assert.equal(b.content[0].text, m.content[0].text);
  assert.equal(b.usage.input_tokens, m.usage.input_tokens);
  // a stop sequence from the middle of the answer
  const text = m.content[0].text, stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 3);
  assert.ok(stop.trim().length > 0, JSON.stringify(stop));
  const s = await anthropic.messages.create({ model: 'tiny', system: 'Be brief.', max_tokens: expect.n, temperature: 0,
    stop_sequences: ['@@never@@', stop], messages: [{ role: 'user', content: expect.prompt }] });
  assert.equal(s.stop_reason, 'stop_sequence');
  assert.equal(s.stop_sequence, stop);
  assert.equal(s.content[0].text, text.slice(0, text.indexOf(stop)));
});

await test('anthropic streaming: MessageStream finalMessage and text events = not streaming', async () => {
  const args = { model: 'tiny', max_tokens: expect.n, temperature: 0, messages: [{ role: 'user', content: expect.prompt }] };
  const whole = await anthropic.messages.create(args);
  let text = '';
  const st = anthropic.messages.stream(args).on('text', (t) => { text += t; });
  const fin = await st.finalMessage();
  assert.equal(text, whole.content[0].text);
  assert.deepEqual(fin.content, whole.content);
  assert.equal(fin.stop_reason, 'max_tokens');
  assert.equal(fin.usage.output_tokens, expect.n);
  assert.equal(fin.usage.input_tokens, whole.usage.input_tokens);
  const types = [];
  for await (const ev of await anthropic.messages.create({ ...args, stream: true })) types.push(ev.type);
  assert.deepEqual([types[0], types[1], types.at(-3), types.at(-2), types.at(-1)],
                   ['message_start', 'content_block_start', 'content_block_stop', 'message_delta', 'message_stop']);
});

await test('anthropic tools: a tool_use block; its tool_result in the next turn = chat.completions', async () => {
  const atools = [{ name: 'get_weather', description: 'Weather of a city', input_schema: weatherSchema }];
  const args = { model: 'qwen3', max_tokens: 160, tools: atools, tool_choice: { type: 'any', disable_parallel_tool_use: true },
                 temperature: 0.9, seed: 3, messages: ask };
  const m = await anthropic.messages.create(args);
  assert.equal(m.stop_reason, 'tool_use');
  const uses = m.content.filter((b) => b.type === 'tool_use');
  assert.equal(uses.length, 1);
  assert.match(uses[0].id, /^toolu_/);
  assert.equal(uses[0].name, 'get_weather');
  assertWeatherArgs(uses[0].input);
  const fin = await anthropic.messages.stream(args).finalMessage();
  assert.deepEqual(fin.content.filter((b) => b.type === 'tool_use').map((b) => [b.name, b.input]), uses.map((b) => [b.name, b.input]));
  assert.equal(fin.stop_reason, 'tool_use');
  const next = await anthropic.messages.create({ model: 'qwen3', max_tokens: 8, temperature: 0, tools: atools,
    messages: [...ask, { role: 'assistant', content: m.content },
               { role: 'user', content: [{ type: 'tool_result', tool_use_id: uses[0].id, content: 'sunny, 24 degrees' }] }] });
  const chat = await openai.chat.completions.create({ model: 'qwen3', tools, temperature: 0, max_tokens: 8, reasoning_effort: 'none',
    messages: [...ask, chatFromBlocks(m.content), { role: 'tool', tool_call_id: uses[0].id, content: 'sunny, 24 degrees' }] });
  assert.equal(next.usage.input_tokens, chat.usage.prompt_tokens);
  assert.equal(next.content.filter((b) => b.type === 'text').map((b) => b.text).join(''), chat.choices[0].message.content ?? '');
  assert.ok(next.usage.input_tokens > m.usage.input_tokens + 10);
});

await test('anthropic thinking: enabled = chat reasoning_content; absent or disabled hides it; count_tokens', async () => {
  const args = { model: 'r1', max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: 'Tell me a story.' }],
                 thinking: { type: 'enabled', budget_tokens: 1024 } };
  const m = await anthropic.messages.create(args);
  const c = await openai.chat.completions.create({ model: 'r1', messages: args.messages, temperature: 0, max_tokens: 16 });
  assert.equal(m.content[0].type, 'thinking');
  assert.equal(m.content[0].thinking, c.choices[0].message.reasoning_content);
  let th = '';
  const fin = await anthropic.messages.stream(args).on('thinking', (d) => { th += d; }).finalMessage();
  assert.equal(th, m.content[0].thinking);
  assert.deepEqual(fin.content, m.content);
  const off = await anthropic.messages.create({ ...args, thinking: { type: 'disabled' } });
  assert.ok(off.content.every((b) => b.type !== 'thinking'), JSON.stringify(off.content));
  const { thinking, ...plain } = args; // Anthropic's rule: no thinking field, no thinking
  const none = await anthropic.messages.create(plain);
  assert.ok(none.content.every((b) => b.type !== 'thinking'), JSON.stringify(none.content));
  // a model that cannot think answers without (Claude Code asks every model)
  const tiny = await anthropic.messages.create({ ...args, model: 'tiny' });
  assert.ok(tiny.content.length === 1 && tiny.content[0].type === 'text', JSON.stringify(tiny.content));
  const n = await anthropic.messages.countTokens({ model: 'r1', messages: args.messages, thinking: args.thinking });
  assert.equal(n.input_tokens, m.usage.input_tokens);
  const n0 = await anthropic.messages.countTokens({ model: 'r1', messages: args.messages });
  assert.equal(n0.input_tokens, none.usage.input_tokens);
});

await test('anthropic models.list / retrieve (the same /v1/models as OpenAI\'s)', async () => {
  const ids = [];
  for await (const m of anthropic.models.list()) {
    assert.equal(m.type, 'model');
    assert.ok(!Number.isNaN(Date.parse(m.created_at)), m.created_at);
    ids.push(m.id);
  }
  assert.ok(ids.includes('tiny:latest') && ids.includes('stories:latest'), ids.join(','));
  const m = await anthropic.models.retrieve('tiny');
  assert.equal(m.id, 'tiny');
  assert.equal(m.display_name, 'tiny');
});

await test('anthropic errors: unknown model is NotFoundError, bad requests are BadRequestError', async () => {
  await assert.rejects(anthropic.messages.create({ model: 'nope', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
                       (e) => e instanceof Anthropic.NotFoundError && e.status === 404 && e.error?.error?.type === 'not_found_error');
  await assert.rejects(anthropic.messages.create({ model: 'tiny', messages: [{ role: 'user', content: 'x' }] }),
                       (e) => e instanceof Anthropic.BadRequestError && /max_tokens/.test(e.message));
  await assert.rejects(anthropic.messages.create({ model: 'tiny', max_tokens: 4, messages: [{ role: 'user', content: [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }),
                       (e) => e instanceof Anthropic.BadRequestError && /messages\[0\]\.content\[0\]: images/.test(e.message));
});

console.log(`clients: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);

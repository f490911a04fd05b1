// The cluster test: three `tandem serve` replicas behind nginx (scripts/cluster), driven by
// `tandem bench --url` and by Node clients (the official openai package and node:http).
//
//   node tests/cluster/node/cluster_test.mjs TANDEM_BINARY REPO_DIR WORK_DIR
//
// Phases (each check prints "ok" or "FAIL"; the exit status is 1 if any failed):
//   1. load: two benches (non-streamed and streamed, 390 requests) and the openai client
//      (logprobs, echo, n choices and prompt lists, tool calls, the Responses API)
//      through the proxy; SSE arrives token by token; every replica served >= 20%.
//   2. SIGKILL one replica while streams run on it: those streams fail with an error, the
//      others finish, and every request sent after the replica is gone completes.
//   3. scripts/rolling-restart under load: zero failed requests.
//   4. a second cluster with --affinity: every turn of a session reaches one replica.
// Both clusters are stopped by signal and must leave no process behind. No check waits on a
// sleep or asserts a speed: readiness and process exits are polled with deadlines.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const [tandem, repo, work] = process.argv.slice(2);
if (!tandem || !repo || !work) {
  console.error('usage: node cluster_test.mjs TANDEM_BINARY REPO_DIR WORK_DIR');
  process.exit(2);
}
const started = Date.now();
const log = (...a) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s]`, ...a);
const failures = [];
function check(ok, what, detail = '') {
  if (ok) {
    log('ok  ', what);
  } else {
    failures.push(what);
    log('FAIL', what, detail);
  }
  return ok;
}
class Fatal extends Error {}
const fatal = (what) => {
  failures.push(what);
  throw new Fatal(what);
};
const delay = (ms) => new Promise((r) => setTimeout(r, ms));  // only between polls
async function poll(what, deadlineMs, fn, everyMs = 20) {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) fatal(`${what} (not within ${deadlineMs / 1000} s)`);
    await delay(everyMs);
  }
}

// ---- HTTP ---------------------------------------------------------------------------------
const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 });

// One request; resolves (never rejects) with status, headers, body, the arrival time of each
// body read, whether the body arrived whole, and the error if any. A keep-alive socket that
// the proxy closed while idle fails before any byte of the answer: that request is sent
// again once on a fresh connection (it reached no replica), as tandem bench does.
function request(port, method, target, body, { headers = {}, agent = keepAlive, retry = true } = {}) {
  return new Promise((resolve) => {
    const out = { status: 0, headers: {}, body: '', reads: [], complete: false, error: null, retried: false };
    const sent = Date.now();
    const req = http.request(
      {
        host: '127.0.0.1', port, method, path: target, agent,
        headers: { 'content-type': 'application/json', ...headers },
      },
      (res) => {
        out.status = res.statusCode;
        out.headers = res.headers;
        res.setEncoding('utf8');
        res.on('data', (d) => {
          out.body += d;
          out.reads.push({ t: performance.now(), data: d });
        });
        res.on('error', (e) => (out.error = out.error || e.message));
        res.on('close', () => {
          out.complete = res.complete;
          if (!res.complete && !out.error) out.error = 'connection closed before the end of the body';
          out.ms = Date.now() - sent;
          resolve(out);
        });
      },
    );
    req.on('error', (e) => {
      if (retry && req.reusedSocket && out.status === 0 && (e.code === 'ECONNRESET' || e.code === 'EPIPE')) {
        request(port, method, target, body, { headers, agent: false, retry: false }).then((r) => {
          r.retried = true;
          resolve(r);
        });
        return;
      }
      out.error = `${e.code || ''} ${e.message}`.trim();
      out.ms = Date.now() - sent;
      resolve(out);
    });
    req.end(body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body));
  });
}
// The replica that answered: the last address of nginx's $upstream_addr ("a, b" after a
// retry, "a : b" after the @refused redirect).
const lastAddr = (upstream) => String(upstream || '').split(/, | : /).pop();
// SSE data fields of a body.
const sseData = (body) => body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6));
const streamOk = (r) => r.status === 200 && r.complete && sseData(r.body).at(-1) === '[DONE]' &&
  !sseData(r.body).some((d) => d.includes('"error"'));
const wholeOk = (r) => {
  if (r.status !== 200 || !r.complete) return false;
  try {
    return JSON.parse(r.body).choices.length === 1;
  } catch {
    return false;
  }
};
function metric(text, series) {
  for (const line of text.split('\n')) {
    const i = line.lastIndexOf(' ');
    if (i > 0 && line.slice(0, i) === series) return Number(line.slice(i + 1));
  }
  return undefined;
}

// A streamed POST over a raw socket (Connection: close): every socket read with its time.
function rawStream(port, target, body) {
  return new Promise((resolve) => {
    const payload = JSON.stringify(body);
    const out = { status: 0, reads: [], text: '', error: null };
    const sock = net.connect(port, '127.0.0.1', () => sock.write(
      `POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload}`));
    sock.setEncoding('utf8');
    sock.on('data', (d) => {
      out.reads.push({ t: performance.now(), data: d });
      out.text += d;
    });
    sock.on('error', (e) => (out.error = e.message));
    sock.on('close', () => {
      out.status = Number((out.text.match(/^HTTP\/1\.1 (\d+)/) || [])[1] || 0);
      resolve(out);
    });
  });
}

// ---- processes -------------------------------------------------------------------------------
function run(cmd, args, opts = {}) {  // resolves with {code, signal, stdout, stderr}
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let stdout = '', stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
};
const groupAlive = (pgid) => alive(-pgid);
// Gone from /proc: reaped (by scripts/cluster). A zombie is not enough: the leader of a
// multi-threaded process turns zombie while its other threads, which share its sockets,
// are still exiting.
const reaped = (pid) => !fs.existsSync(`/proc/${pid}`);

const clusters = new Set();
class Cluster {
  constructor(name, port, extra) {
    this.name = name;
    this.port = port;
    this.dir = path.join(work, name);
    this.out = '';
    this.proc = spawn('bash', [path.join(repo, 'scripts/cluster'), '3', '--port', String(port), '--dir', this.dir,
      '--tandem', tandem, ...extra], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    this.pgid = this.proc.pid;  // detached: its own process group, which every replica joins
    fs.writeFileSync(path.join(work, `${name}.pgid`), String(this.pgid));  // for run.sh's cleanup
    this.proc.stdout.on('data', (d) => (this.out += d));
    this.proc.stderr.on('data', (d) => (this.out += d));
    this.exit = new Promise((r) => this.proc.on('close', (code, signal) => r({ code, signal })));
    this.exited = false;
    this.exit.then(() => (this.exited = true));
    clusters.add(this);
  }
  replicaPort(i) { return this.port + i; }
  pid(i) { return Number(fs.readFileSync(path.join(this.dir, `replica-${i}.pid`), 'utf8')); }
  accessLog() {
    const file = path.join(this.dir, 'access.log');
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  }
  async ready() {
    await poll(`${this.name}: scripts/cluster reports ready`, 60000, () => {
      if (this.exited) fatal(`${this.name}: scripts/cluster exited at start:\n${this.out}`);
      return this.out.includes('cluster: http://');
    });
  }
  // Stops the cluster with SIGNAL sent to scripts/cluster itself (or, like Ctrl-C in a
  // terminal, to its whole process group) and checks that nothing is left running.
  async stop(signal, wholeGroup) {
    process.kill(wholeGroup ? -this.pgid : this.pgid, signal);
    const deadline = Date.now() + 30000;
    while ((!this.exited || groupAlive(this.pgid)) && Date.now() < deadline) await delay(20);
    const left = groupAlive(this.pgid);
    if (left) process.kill(-this.pgid, 'SIGKILL');
    clusters.delete(this);
    return !left && this.exited;
  }
}
function killAllClusters() {
  for (const c of clusters) {
    try {
      process.kill(-c.pgid, 'SIGKILL');
    } catch {}
  }
}
process.on('exit', killAllClusters);
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => {
  killAllClusters();
  process.exit(1);
});

// Four free consecutive ports below the ephemeral range (other tests use port 0).
async function freePorts() {
  const free = (p) => new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(p, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + 4 * Math.floor(Math.random() * 3000);
    let ok = true;
    for (let p = base; p < base + 4 && ok; p++) ok = await free(p);
    if (ok) return base;
  }
  fatal('no four free consecutive ports');
}

function bench(port, args, json) {
  return run(tandem, ['bench', '--url', `http://127.0.0.1:${port}`, '--prompt-tokens', '8:32', '--json', json, ...args]);
}
function benchResult(name, res, json, requests) {
  let summary = {};
  try {
    summary = JSON.parse(fs.readFileSync(json, 'utf8')).runs[0];
  } catch {}
  log(`${name}: ${summary.completed} completed, ${summary.failed} failed, ${summary.request_throughput?.toFixed(1)} req/s` +
    (summary.first_error ? `; first error: ${summary.first_error}` : ''));
  if (res.code !== 0 && summary.completed === undefined) log(res.stdout + res.stderr);
  return summary;
}

// ---- the test ---------------------------------------------------------------------------------
const model = path.join(work, 'demo.gguf');
const serveArgs = ['--model', model, '--kv-tokens', '8192', '--threads', '1', '--shutdown-grace', '10'];

// Tool calls (issue 17) as the official client reads them: a named function constrains the
// output to one call whose arguments fit the schema; the client's stream helper assembles
// the streamed deltas into the same call.
async function toolCallsRoundTrip(client, id) {
  const tools = [{
    type: 'function',
    function: {
      name: 'add', description: 'Adds two integers',
      parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
    },
  }];
  const request = {
    model: id, messages: [{ role: 'user', content: 'What is 2 + 3?' }], tools, max_tokens: 400, seed: 5,
    tool_choice: { type: 'function', function: { name: 'add' } }, parallel_tool_calls: false,
  };
  const whole = await client.chat.completions.create(request);
  const call = whole.choices[0].message.tool_calls?.[0];
  const args = call ? JSON.parse(call.function.arguments) : {};
  // A named function's forced call finishes with 'stop', as OpenAI and vLLM report it.
  check(whole.choices[0].finish_reason === 'stop' && whole.choices[0].message.tool_calls.length === 1 &&
    call.type === 'function' && call.id.startsWith('call_') && call.function.name === 'add' &&
    Number.isInteger(args.a) && Number.isInteger(args.b) && Object.keys(args).length === 2,
    'openai: chat.completions.create() with a named tool gives one call with valid arguments', JSON.stringify(whole.choices[0]));
  const runner = client.chat.completions.stream(request);
  const streamed = await runner.finalChatCompletion();
  const scall = streamed.choices[0].message.tool_calls?.[0];
  check(streamed.choices[0].finish_reason === 'stop' && streamed.choices[0].message.tool_calls.length === 1 &&
    scall.function.name === 'add' && scall.function.arguments === call?.function.arguments,
    'openai: chat.completions.stream() assembles the same tool call from the deltas', JSON.stringify(streamed.choices[0]));
}

// The Responses API (POST /v1/responses) as the official client reads it: the whole
// response and its output_text, the typed events its stream helper accumulates, logprobs,
// the chat answer it amounts to, a refused stored-state field, and a function call with its
// output sent back. The replicas load one model, so one seed gives one text on any of them.
async function responsesRoundTrip(client, id) {
  const request = { model: id, input: 'Hello', max_output_tokens: 8, seed: 7, instructions: 'Be brief.' };
  const whole = await client.responses.create(request);
  const message = whole.output.find((o) => o.type === 'message');
  const part = message?.content.find((p) => p.type === 'output_text');
  check(['completed', 'incomplete'].includes(whole.status) && typeof whole.output_text === 'string' &&
    whole.output_text.length > 0 && whole.output_text === part?.text && whole.id.startsWith('resp_') &&
    whole.usage.output_tokens >= 1 && whole.usage.output_tokens <= 8 && whole.seed === 7,
    'openai: responses.create() gives a response whose output_text is its message\'s text',
    JSON.stringify({ id: whole.id, status: whole.status, output: whole.output, usage: whole.usage, seed: whole.seed }));

  const stream = client.responses.stream(request);
  const events = [];
  for await (const ev of stream) events.push(ev);
  const final = await stream.finalResponse();
  const seqs = events.map((e) => e.sequence_number);
  check(final.output_text === whole.output_text && final.status === whole.status &&
    final.usage?.output_tokens === whole.usage.output_tokens,
    'openai: responses.stream() assembles the same response as responses.create() for the same seed',
    `${JSON.stringify(final.output_text)} (${final.status}) vs ${JSON.stringify(whole.output_text)} (${whole.status})`);
  check(events.length >= 8 && events[0].type === 'response.created' && events[1].type === 'response.in_progress' &&
    seqs[0] === 0 && seqs.every((n, i) => Number.isInteger(n) && (i === 0 || n > seqs[i - 1])) &&
    events.at(-1).type === `response.${whole.status}` &&
    events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join('') === whole.output_text,
    `openai: responses.stream() events (${events.length}) begin with response.created at sequence_number 0, ` +
    'count up, and end with the final status',
    events.map((e) => `${e.sequence_number}:${e.type}`).join(' '));

  const scored = await client.responses.create({ ...request, include: ['message.output_text.logprobs'], top_logprobs: 2 });
  const lps = scored.output[0]?.content?.[0]?.logprobs ?? [];
  check(scored.output_text === whole.output_text && lps.length === scored.usage.output_tokens &&
    lps.every((e) => e.logprob <= 0 && e.top_logprobs.length === 2 && e.top_logprobs.every((t) => t.logprob <= 0)),
    'openai: responses.create() with include message.output_text.logprobs and top_logprobs 2',
    JSON.stringify({ usage: scored.usage, logprobs: lps }));

  const chat = await client.chat.completions.create({
    model: id, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], max_tokens: 8, seed: 7,
  });
  check(chat.choices[0].message.content === whole.output_text &&
    chat.usage.completion_tokens === whole.usage.output_tokens && chat.usage.prompt_tokens === whole.usage.input_tokens &&
    (chat.choices[0].finish_reason === 'length') === (whole.status === 'incomplete'),
    'openai: responses.create() says what chat.completions.create() says for the same messages and seed',
    `${JSON.stringify(chat.choices[0].message.content)} vs ${JSON.stringify(whole.output_text)}`);

  let refusal = null;
  try {
    await client.responses.create({ model: id, input: 'x', previous_response_id: 'resp_123' });
  } catch (e) {
    refusal = e;
  }
  check(refusal instanceof OpenAI.APIError && refusal.status === 400 &&
    (refusal.param ?? refusal.error?.param) === 'previous_response_id',
    'openai: responses.create() with previous_response_id is refused with a 400 naming the field',
    refusal ? `${refusal.constructor.name} ${refusal.status} param ${refusal.param}: ${refusal.message}` : 'no error');

  // A named function: one function_call item whose arguments fit the schema; its output
  // goes back with the call as returned.
  const tools = [{
    type: 'function', name: 'add', description: 'Adds two integers', strict: true,
    parameters: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
  }];
  const toolRequest = {
    model: id, input: 'What is 2 + 3?', tools, tool_choice: { type: 'function', name: 'add' }, parallel_tool_calls: false,
    max_output_tokens: 400, seed: 5,
  };
  const called = await client.responses.create(toolRequest);
  const calls = called.output.filter((o) => o.type === 'function_call');
  const call = calls[0];
  let args = null;
  try {
    args = JSON.parse(call?.arguments);
  } catch {}
  check(called.status === 'completed' && calls.length === 1 && call.name === 'add' && typeof call.call_id === 'string' &&
    call.call_id.length > 0 && args !== null && typeof args === 'object' && !Array.isArray(args) &&
    Number.isInteger(args.a) && Number.isInteger(args.b) && Object.keys(args).length === 2,
    'openai: responses.create() with a named tool gives one function_call item with valid arguments',
    JSON.stringify(called.output));
  const toolStream = client.responses.stream(toolRequest);
  const streamedCall = (await toolStream.finalResponse()).output.find((o) => o.type === 'function_call');
  check(streamedCall?.name === 'add' && streamedCall.arguments === call?.arguments,
    'openai: responses.stream() assembles the same function_call item', JSON.stringify(streamedCall));
  const answered = await client.responses.create({
    model: id, tools, max_output_tokens: 8, seed: 5,
    input: [{ role: 'user', content: 'What is 2 + 3?' }, call, { type: 'function_call_output', call_id: call?.call_id, output: '42' }],
  });
  check(['completed', 'incomplete'].includes(answered.status) && answered.usage.input_tokens > called.usage.input_tokens,
    'openai: responses.create() takes the function_call item back with its function_call_output',
    JSON.stringify({ status: answered.status, output: answered.output, usage: answered.usage }));
}

// Anthropic's Messages API (POST /v1/messages) as the official anthropic client reads it:
// the message, the stream its MessageStream folds, the chat answer it amounts to,
// countTokens, a forced tool's tool_use block sent back with its tool_result, and a refusal
// in Anthropic's error shape. The replicas load one model, so one seed gives one text.
async function anthropicRoundTrip(port, openai, id) {
  const client = new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  const request = { model: id, max_tokens: 8, system: 'Be brief.', messages: [{ role: 'user', content: 'Hello' }], seed: 7 };
  const whole = await client.messages.create(request);
  const text = whole.content[0]?.text;
  check(whole.type === 'message' && whole.id.startsWith('msg_') && whole.role === 'assistant' &&
    whole.content.length === 1 && whole.content[0].type === 'text' && typeof text === 'string' &&
    ['max_tokens', 'end_turn'].includes(whole.stop_reason) && whole.usage.output_tokens >= 1 && whole.usage.output_tokens <= 8,
    'anthropic: messages.create() gives a message with one text block', JSON.stringify(whole));
  const stream = client.messages.stream(request);
  let deltas = '';
  stream.on('text', (piece) => { deltas += piece; });
  const final = await stream.finalMessage();
  check(final.content[0]?.text === text && deltas === text && final.stop_reason === whole.stop_reason &&
    final.usage.output_tokens === whole.usage.output_tokens,
    'anthropic: messages.stream() folds to the same message as messages.create() for the same seed',
    `${JSON.stringify(final)} vs ${JSON.stringify(whole)}`);
  const chat = await openai.chat.completions.create({
    model: id, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }], max_tokens: 8, seed: 7,
  });
  const counted = await client.messages.countTokens({ model: id, system: 'Be brief.', messages: request.messages });
  const prompt = whole.usage.input_tokens + whole.usage.cache_read_input_tokens;
  check(chat.choices[0].message.content === text && chat.usage.prompt_tokens === prompt &&
    counted.input_tokens === prompt && (chat.choices[0].finish_reason === 'length') === (whole.stop_reason === 'max_tokens'),
    'anthropic: messages.create() and countTokens() say what chat.completions.create() says for the same turns and seed',
    JSON.stringify({ chat: chat.choices[0].message.content, text, prompt, counted, chatUsage: chat.usage }));

  const tools = [{
    name: 'add', description: 'Adds two integers',
    input_schema: { type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
  }];
  const toolRequest = {
    model: id, max_tokens: 400, seed: 5, tools, tool_choice: { type: 'tool', name: 'add', disable_parallel_tool_use: true },
    messages: [{ role: 'user', content: 'What is 2 + 3?' }],
  };
  const called = await client.messages.create(toolRequest);
  const use = called.content.find((b) => b.type === 'tool_use');
  check(called.stop_reason === 'tool_use' && use?.name === 'add' && Number.isInteger(use.input?.a) &&
    Number.isInteger(use.input?.b) && Object.keys(use.input).length === 2 && use.id.length > 0,
    'anthropic: a forced tool gives a tool_use block with an input object', JSON.stringify(called.content));
  const streamedCall = (await client.messages.stream(toolRequest).finalMessage()).content.find((b) => b.type === 'tool_use');
  check(JSON.stringify(streamedCall?.input) === JSON.stringify(use?.input) && streamedCall?.name === 'add',
    'anthropic: messages.stream() folds the same tool_use block from its input_json_delta', JSON.stringify(streamedCall));
  const answered = await client.messages.create({
    model: id, max_tokens: 8, seed: 5, tools,
    messages: [...toolRequest.messages, { role: 'assistant', content: called.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use?.id, content: '5' }] }],
  });
  check(answered.type === 'message' &&
    answered.usage.input_tokens + answered.usage.cache_read_input_tokens > called.usage.input_tokens + called.usage.cache_read_input_tokens,
    'anthropic: the tool_use block goes back with its tool_result', JSON.stringify(answered));

  let refusal = null;
  try {
    await client.messages.create({ model: id, max_tokens: 8, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'http://x/y.png' } }] }] });
  } catch (e) {
    refusal = e;
  }
  check(refusal instanceof Anthropic.BadRequestError && refusal.error?.error?.type === 'invalid_request_error' &&
    refusal.error.error.message.includes("'messages[0].content[0]'"),
    'anthropic: an image block is refused with a 400 invalid_request_error naming it',
    refusal ? `${refusal.constructor.name} ${refusal.status}: ${JSON.stringify(refusal.error)}` : 'no error');
}

// The SDK asks for base64 by default and decodes it to floats itself: the same numbers as
// the float answer, in input order, unit length.
async function embeddingsRoundTrip(client, id) {
  const input = ['The cat sat.', 'A dog ran.'];
  const decoded = await client.embeddings.create({ model: id, input });
  const floats = await client.embeddings.create({ model: id, input, encoding_format: 'float' });
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  const same = decoded.data.length === 2 && decoded.data.every((d, i) => d.index === i &&
    d.embedding.length === floats.data[i].embedding.length &&
    d.embedding.every((x, k) => Math.fround(x) === Math.fround(floats.data[i].embedding[k])));
  check(same && Math.abs(norm(decoded.data[0].embedding) - 1) < 1e-5 && decoded.usage.prompt_tokens > 0,
    'openai: embeddings.create() (base64, decoded by the SDK) gives the float answer\'s unit vectors',
    JSON.stringify({ n: decoded.data.length, usage: decoded.usage }));
}

async function phaseLoad(c) {
  log('phase 1: load through the proxy');
  const P = c.port;
  const jsonA = path.join(work, 'bench-a.json'), jsonB = path.join(work, 'bench-b.json');
  const benchA = bench(P, ['--requests', '300', '--concurrency', '6', '--max-tokens', '16', '--seed', '1'], jsonA);
  const benchB = bench(P, ['--requests', '90', '--concurrency', '3', '--max-tokens', '16', '--stream', '--seed', '2'], jsonB);

  // The official openai client through the proxy, while the benches run.
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${P}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  try {
    const models = await client.models.list();
    const id = models.data[0]?.id;
    check(id === 'demo', 'openai: models.list() through nginx names the served model', id);
    const completion = await client.completions.create({ model: id, prompt: 'Once upon', max_tokens: 8, seed: 7 });
    check(completion.choices[0].finish_reason === 'length' && completion.usage.completion_tokens === 8,
      'openai: completions.create()', JSON.stringify(completion.usage));
    const chat = await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, seed: 7 });
    check(chat.choices[0].message.role === 'assistant' && chat.usage.completion_tokens === 8,
      'openai: chat.completions.create()');
    const stream = await client.chat.completions.create({
      model: id, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 8, seed: 7,
      stream: true, stream_options: { include_usage: true },
    });
    let text = '', finish = null, usage = null, chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.choices[0]?.delta?.content) text += chunk.choices[0].delta.content;
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
      if (chunk.usage) usage = chunk.usage;
    }
    check(text === chat.choices[0].message.content && finish === 'length' && usage?.completion_tokens === 8,
      `openai: streamed chat (${chunks} chunks) equals the non-streamed answer for the same seed`);
    // Log-probabilities (issue 16), as the client types them.
    const scored = await client.completions.create({ model: id, prompt: 'Once upon', max_tokens: 4, seed: 7, logprobs: 2 });
    const lp = scored.choices[0].logprobs;
    check(lp && lp.tokens.length === 4 && lp.token_logprobs.every((v) => v <= 0) &&
      lp.top_logprobs.every((t, i) => Object.keys(t).length <= 3 && lp.tokens[i] in t) && lp.text_offset[0] === 0,
      'openai: completions.create() with logprobs', JSON.stringify(lp));
    const echoed = await client.completions.create({ model: id, prompt: 'Once upon', max_tokens: 0, echo: true, logprobs: 1 });
    check(echoed.choices[0].text === 'Once upon' && echoed.choices[0].logprobs.token_logprobs[0] === null &&
      echoed.usage.completion_tokens === 0,
      'openai: echo with max_tokens 0 scores the prompt');
    const chatLp = await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, seed: 7, logprobs: true, top_logprobs: 2 });
    const content = chatLp.choices[0].logprobs?.content ?? [];
    check(content.length === 4 && content.every((e) => e.top_logprobs.length === 2 && Array.isArray(e.bytes)) &&
      typeof chatLp.system_fingerprint === 'string',
      'openai: chat logprobs content[] and system_fingerprint');
    // n choices of a list of prompts: indexed prompt * n + choice, each with its logprobs and
    // a seed (safe in a double) that replays it alone.
    const several = await client.completions.create({ model: id, prompt: ['Once upon', 'In a land'], n: 3, max_tokens: 4, seed: 7, logprobs: 2, ignore_eos: true });
    check(several.choices.length === 6 && several.choices.every((c, i) => c.index === i &&
      c.logprobs.tokens.length === 4 && c.logprobs.token_logprobs.every((v) => v <= 0) && Number.isSafeInteger(c.seed)) &&
      several.usage.completion_tokens === 24,
      'openai: completions.create() with n 3 and two prompts parses six choices with logprobs', JSON.stringify(several.usage));
    const alone = await client.completions.create({ model: id, prompt: 'In a land', max_tokens: 4, seed: several.choices[4].seed, ignore_eos: true });
    check(alone.choices[0].text === several.choices[4].text, 'openai: a choice replays alone with its seed',
      `${JSON.stringify(alone.choices[0].text)} vs ${JSON.stringify(several.choices[4].text)}`);
    const chatN = await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'Hello' }], n: 4, max_tokens: 5, seed: 7, logprobs: true, top_logprobs: 1 });
    check(chatN.choices.length === 4 && chatN.choices.every((c, i) => c.index === i && (c.logprobs?.content ?? []).length > 0),
      'openai: chat.completions.create() with n 4 and logprobs');
    const chatStream = await client.chat.completions.create({ model: id, messages: [{ role: 'user', content: 'Hello' }], n: 4, max_tokens: 5, seed: 7, stream: true });
    const byIndex = ['', '', '', ''];
    for await (const chunk of chatStream) for (const c of chunk.choices) byIndex[c.index] += c.delta?.content ?? '';
    check(byIndex.every((t, i) => t === chatN.choices[i].message.content),
      'openai: streamed chat with n 4 interleaves by index and equals the whole answer');
    await toolCallsRoundTrip(client, id);
    await responsesRoundTrip(client, id);
    await embeddingsRoundTrip(client, id);
    await anthropicRoundTrip(P, client, id);
  } catch (e) {
    check(false, 'openai client through nginx', String(e));
  }

  const [resA, resB] = await Promise.all([benchA, benchB]);
  const a = benchResult('bench A (300, non-streamed)', resA, jsonA);
  const b = benchResult('bench B (90, streamed)', resB, jsonB);
  check(a.completed === 300 && a.failed === 0 && b.completed === 90 && b.failed === 0,
    'tandem bench --url through nginx: 390 requests (90 streamed), none failed');

  // SSE through the proxy (once the benches are done, so that the machine is not swamped),
  // read from a raw socket: the events of a long stream must arrive in many socket reads
  // spread over the generation, not in one burst. Counts reads, not speed: a busy machine
  // may merge some events into one read, so no read may carry a third of them.
  // Up to three tries: a buffering proxy fails every one; a stall of the machine, one.
  let sseOk = false;
  for (let attempt = 1; attempt <= 3 && !sseOk; attempt++) {
    const sse = await rawStream(P, '/v1/completions', { prompt: 'x', max_tokens: 1900, ignore_eos: true, stream: true, seed: 3 });
    const perRead = sse.reads.map((r) => (r.data.match(/"finish_reason":null\}\]\}/g) || []).length).filter((n) => n > 0);
    const events = perRead.reduce((x, y) => x + y, 0);
    const sorted = [...perRead].sort((x, y) => x - y);
    const textTimes = sse.reads.filter((r) => /"finish_reason":null/.test(r.data)).map((r) => r.t);
    const gaps = textTimes.slice(1).map((t, i) => t - textTimes[i]).sort((x, y) => x - y);
    log(`SSE try ${attempt}: ${events} text events in ${perRead.length} socket reads (median ${sorted[sorted.length >> 1] || 0} ` +
      `a read, at most ${sorted.at(-1) || 0}) over ${((textTimes.at(-1) || 0) - (textTimes[0] || 0)).toFixed(1)} ms; gaps ` +
      `between reads: median ${(gaps[gaps.length >> 1] || 0).toFixed(2)} ms, largest ${(gaps.at(-1) || 0).toFixed(2)} ms`);
    if (!check(sse.status === 200 && sse.text.includes('data: [DONE]'), 'SSE through nginx ends with [DONE]', sse.error || '')) break;
    sseOk = events >= 1000 && perRead.length >= 20 && (sorted.at(-1) || 0) <= events / 3;
  }
  check(sseOk, 'SSE arrives token by token: in 20+ socket reads, none with a third of the events');

  // Every replica's own /metrics, through its /replica/I/metrics location.
  const served = [];
  for (let i = 1; i <= 3; i++) {
    const m = await request(P, 'GET', `/replica/${i}/metrics`);
    served.push((metric(m.body, 'tandem_http_requests_total{endpoint="/v1/completions",status="200"}') || 0) +
      (metric(m.body, 'tandem_http_requests_total{endpoint="/v1/chat/completions",status="200"}') || 0));
  }
  const total = served.reduce((x, y) => x + y, 0);
  log(`requests served by replica: ${served.join(', ')} (of ${total})`);
  check(total >= 390 && served.every((n) => n >= 0.2 * total), 'every replica served at least 20% of the requests');
}

async function phaseKill(c) {
  log('phase 2: SIGKILL a replica mid-run');
  const P = c.port;
  const jsonC = path.join(work, 'bench-c.json');
  // Bench C first (open loop: 100 requests/s for 8 s at least, at most 4 in flight: a
  // SIGKILLed replica took 3.9-4.3 s to be reaped on a loaded 2-core VM, and with 4 s of
  // bench C its requests were over before the replica was gone); once it
  // is under way, six long streams (demo model: context 2048; four choices each, so that a
  // stream lasts longer than its 1900 tokens alone would, under half a second on a fast
  // machine), two a replica under least_conn; the kill comes as soon as one of them is
  // under way on its replica.
  // (Streams first and bench C after them left too little time: a 1900-token stream on the
  // demo model can end within a second, before a loaded machine had bench C going.)
  const before = c.accessLog().length;
  const benchCRequests = 800;
  const benchC = bench(P, ['--requests', String(benchCRequests), '--request-rate', '100', '--concurrency', '4', '--max-tokens', '24',
    '--seed', '3'], jsonC);
  await poll('bench C under way', 30000, () => c.accessLog().length >= before + 6);
  const tStreams = Date.now();
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${P}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  // Each stream stops reading after its first text until the kill: the proxy and the
  // replica then hold the rest, so a stream cannot end before the kill however fast the
  // replica is or however late this process gets to look (its event loop can be busy for
  // seconds draining another stream's events under a loaded machine).
  let releaseStreams;
  const released = new Promise((resolve) => (releaseStreams = resolve));
  const streams = [];
  for (let k = 0; k < 6; k++) {
    const s = { k, replica: '', firstText: false, done: false, error: null, text: '', began: 0, ended: 0 };
    // X-Session-Id tags the stream in the proxy's log (no affinity in this cluster).
    s.started = client.completions.create({ model: 'demo', prompt: 'x', max_tokens: 1900, n: 4, ignore_eos: true, stream: true, seed: 100 + k },
      { headers: { 'x-session-id': `long-${k}` } })
      .withResponse().then(async ({ data, response }) => {
        s.replica = lastAddr(response.headers.get('x-tandem-replica'));
        try {
          for await (const chunk of data) {
            if (chunk.choices?.[0]?.text) {
              s.text += chunk.choices[0].text;
              if (!s.firstText) {
                s.began = Date.now();
                s.firstText = true;
                await released;
              }
            }
          }
          s.done = true;
        } catch (e) {
          s.error = `${e.constructor.name}: ${e.message}${e.cause ? ` (${e.cause.message || e.cause})` : ''}`;
        }
        s.ended = Date.now();
      }, (e) => (s.error = `${e.constructor.name}: ${e.message}`));
    streams.push(s);
  }
  // The kill comes once a stream is under way (its replica known, text arriving, not
  // finished): waiting for all six to have their replica let the first ones run to their
  // end on a fast replica while a later one still waited for its headers.
  await poll('a long stream under way', 30000, () =>
    streams.some((s) => s.replica && s.firstText && !s.done && !s.error) ||
    streams.every((s) => s.done || s.error));
  const t0 = tStreams;
  // The victim: a replica with a long stream that nginx is still proxying (no log line yet;
  // the Node client may lag behind what the replica has sent, so its own view will not do).
  const logged = new Set(c.accessLog().map((e) => e.session));
  const running = streams.filter((s) => s.replica && !logged.has(`long-${s.k}`) && !s.error);
  log(`streams began at ${streams.map((s) => (s.began ? `+${s.began - t0}` : 'none yet')).join(', ')} ms; ` +
    `kill at +${Date.now() - t0} ms; ${running.length} streams still proxied`);
  if (running.length === 0)
    fatal(`the long streams ended before the kill: ${streams.map((s) => `${s.k}: began +${s.began - t0} ms, ` +
      `ended +${s.ended - t0} ms, ${s.error || 'done'}`).join('; ')}`);
  const victimAddr = running[0].replica;
  const victim = Number(victimAddr.split(':')[1]) - P;
  const pid = c.pid(victim);
  const tKill = Date.now();
  process.kill(pid, 'SIGKILL');
  releaseStreams();
  await poll('the killed replica is gone', 10000, () => reaped(pid), 1);
  const tGone = Date.now();
  log(`killed replica ${victim} (${victimAddr}, pid ${pid}) with ${streams.filter((s) => s.replica === victimAddr).length} of the long streams on it; ` +
    `gone after ${tGone - tKill} ms`);

  // Requests sent after the failure: all must complete.
  const after = [];
  for (let k = 0; k < 12; k++) {
    const stream = k % 2 === 0;
    after.push(request(P, 'POST', '/v1/completions', { prompt: `after ${k}`, max_tokens: 12, stream, seed: k }));
  }
  const afterResults = await Promise.all(after);
  const badAfter = afterResults.filter((r) => !(streamOkOrWhole(r)));
  check(badAfter.length === 0, 'all 12 requests sent after the kill completed (6 streamed)',
    badAfter.map((r) => `${r.status} ${r.error} ${r.body.slice(0, 200)}`).join(' | '));

  await poll('the long streams end', 60000, () => streams.every((s) => s.done || s.error));
  // Which streams were still coming from the killed replica: by the proxy's log, the time
  // nginx read the last byte from it ($upstream_response_time) came after the kill.
  const byTag = new Map(c.accessLog().filter((e) => e.session).map((e) => [e.session, e]));
  const upstreamEnd = (e) => (e.time - e.request_time + Number(String(e.upstream_time).split(/[,:] /).pop())) * 1000;
  // The log's times are whole milliseconds (three of them make a stream's end), and a
  // stream cut by the kill ends a few after it: one that ended within kMargin of the kill
  // may have finished or been cut, and either outcome is right for it.
  const kMargin = 5;
  const endOf = (s) => (byTag.has(`long-${s.k}`) ? upstreamEnd(byTag.get(`long-${s.k}`)) : Infinity);
  // A stream's replica: from its response headers, or (a stream the kill cut before its
  // headers came: nginx's 502) from the proxy's log.
  const replicaOf = (s) =>
    s.replica || (byTag.has(`long-${s.k}`) ? lastAddr(byTag.get(`long-${s.k}`).upstream) : '');
  const onVictimAll = streams.filter((s) => replicaOf(s) === victimAddr);
  const elsewhere = streams.filter((s) => replicaOf(s) !== victimAddr);
  const finishedBefore = onVictimAll.filter((s) => endOf(s) < tKill - kMargin);
  const cutByKill = onVictimAll.filter((s) => endOf(s) > tKill + kMargin);
  const onVictim = onVictimAll.filter((s) => s.error);
  check(finishedBefore.every((s) => s.done), `the ${finishedBefore.length} streams the killed replica had finished before completed`);
  for (const s of onVictim) log(`stream ${s.k}, running on the killed replica: ${s.error}`);
  check(onVictim.length >= 1 && onVictim.every((s) => endOf(s) >= tKill - kMargin) &&
    cutByKill.every((s) => !s.done && s.error),
    `the ${onVictim.length} streams running on the killed replica failed with an error in the openai client, ` +
    'and only they', onVictimAll.map((s) => `${s.k}: end ${endOf(s) - tKill} ms after the kill, ${s.error || 'done'}`).join('; '));
  check(elsewhere.every((s) => s.done && !s.error), `the ${elsewhere.length} streams on the other replicas completed`,
    elsewhere.map((s) => s.error).join(' | '));

  const resC = await benchC;
  const cSum = benchResult(`bench C (${benchCRequests}, non-streamed, across the kill)`, resC, jsonC);
  // The proxy's log tells every request's fate: failures only on the killed replica, only for
  // requests that were in flight when it died; everything that started later succeeded.
  // (This phase's own lines: phase 1 sent a request that is refused with a 400 on purpose.)
  const entries = c.accessLog().slice(before).filter((e) => e.uri.startsWith('/v1/') && e.method === 'POST');
  const start = (e) => (e.time - e.request_time) * 1000;
  const failed = entries.filter((e) => e.status !== 200);
  const lateFailed = failed.filter((e) => start(e) > tGone + 1);
  const inFlight = entries.filter((e) => lastAddr(e.upstream) === victimAddr &&
    start(e) <= tGone && e.time * 1000 >= tKill - 1);
  const retried = entries.filter((e) => start(e) >= tKill - 1 && e.upstream.includes(`${victimAddr},`));
  log(`proxy log: ${failed.length} non-200 answers (${failed.map((e) => `${e.status} via ${e.upstream}`).join('; ')}), ` +
    `${inFlight.length} requests in flight on the killed replica, ${retried.length} later requests refused by it and resent`);
  check(lateFailed.length === 0, 'no request that started after the replica was gone failed (proxy log)',
    JSON.stringify(lateFailed));
  check(failed.every((e) => e.status === 502 && lastAddr(e.upstream) === victimAddr),
    'every failed non-streamed request got nginx\'s 502 from the killed replica');
  const lateStarted = entries.filter((e) => start(e) > tGone + 1).length;
  check(lateStarted >= 24, `requests kept coming after the kill (${lateStarted} started after it)`);
  check(cSum.completed + cSum.failed === benchCRequests && cSum.failed <= inFlight.length &&
    (cSum.failed === 0 || /HTTP 502.*bad_gateway/.test(cSum.first_error || '')),
    `bench C: its ${cSum.failed} failures were requests in flight on the killed replica, with a clear error`,
    cSum.first_error);
  await poll('scripts/cluster restarts the killed replica', 30000, async () =>
    (await request(P, 'GET', `/replica/${victim}/health`)).status === 200 && c.pid(victim) !== pid);
  return { tKill, tGone, lost: onVictim.length + (cSum.failed || 0), retried: retried.length };
}
function streamOkOrWhole(r) {
  return (r.headers['content-type'] || '').startsWith('text/event-stream') ? streamOk(r) : wholeOk(r);
}

async function phaseRollingRestart(c) {
  log('phase 3: rolling restart under load');
  const P = c.port;
  const jsonD = path.join(work, 'bench-d.json');
  const pidsBefore = [1, 2, 3].map((i) => c.pid(i));
  const logBefore = c.accessLog().length;
  let stop = false, sent = 0, retried = 0;
  const bad = [];
  const loop = async (w) => {  // closed-loop load until the restart ends: 4 workers, half streamed
    for (let k = 0; !stop; k++) {
      const stream = (k + w) % 2 === 0;
      const r = await request(P, 'POST', '/v1/completions', { prompt: `w${w} ${k}`, max_tokens: 16, stream, seed: k });
      sent++;
      if (r.retried) retried++;
      if (!streamOkOrWhole(r)) bad.push(`${r.status} ${r.error} ${r.body.slice(0, 200)}`);
    }
  };
  const workers = [0, 1, 2, 3].map(loop);
  const benchD = bench(P, ['--requests', '100', '--concurrency', '2', '--max-tokens', '16', '--seed', '4'], jsonD);
  await poll('load under way', 30000, () => sent >= 8);
  const restart = await run('bash', [path.join(repo, 'scripts/rolling-restart'), '--dir', c.dir]);
  const sentDuring = sent;
  stop = true;
  await Promise.all(workers);
  const resD = await benchD;
  log(restart.stdout.trim() + restart.stderr.trim());
  check(restart.code === 0, 'scripts/rolling-restart exits 0', restart.stderr);
  const pidsAfter = [1, 2, 3].map((i) => c.pid(i));
  check(pidsAfter.every((p, i) => p !== pidsBefore[i]), 'every replica is a new process', `${pidsBefore} -> ${pidsAfter}`);
  const dSum = benchResult('bench D (100, non-streamed, during the restart)', resD, jsonD);
  const entries = c.accessLog().slice(logBefore).filter((e) => e.uri.startsWith('/v1/'));
  const non200 = entries.filter((e) => e.status !== 200);
  log(`rolling restart: ${sentDuring} Node requests during it (${retried} resent after a stale keep-alive socket), ` +
    `${entries.length} API requests in the proxy log, ${non200.length} not 200`);
  check(sentDuring >= 12 && bad.length === 0, `zero failed requests among the ${sent} sent by Node during the restart`, bad.join(' | '));
  check(dSum.failed === 0 && dSum.completed === 100, 'zero failed requests in tandem bench during the restart', dSum.first_error);
  check(non200.length === 0, 'the proxy answered every request 200 during the restart', JSON.stringify(non200.slice(0, 3)));
}

async function phaseAffinity(c) {
  log('phase 4: affinity mode (X-Session-Id)');
  const P = c.port;
  const sessions = 12, turns = 4;
  const replicaOf = {};
  const errors = [];
  await Promise.all(Array.from({ length: sessions }, async (_, s) => {
    const messages = [];
    replicaOf[s] = new Set();
    for (let t = 0; t < turns; t++) {
      messages.push({ role: 'user', content: `session ${s}, turn ${t}` });
      const r = await request(P, 'POST', '/v1/chat/completions', { messages, max_tokens: 6, seed: s * 10 + t },
        { headers: { 'x-session-id': `conversation-${s}` } });
      if (!wholeOk(r)) {
        errors.push(`${r.status} ${r.error}`);
        continue;
      }
      replicaOf[s].add(r.headers['x-tandem-replica']);
      messages.push({ role: 'assistant', content: JSON.parse(r.body).choices[0].message.content });
    }
  }));
  check(errors.length === 0, `${sessions} sessions x ${turns} turns answered`, errors.join(' | '));
  const pinned = Object.values(replicaOf).every((set) => set.size === 1);
  const used = new Set(Object.values(replicaOf).flatMap((set) => [...set]));
  log(`sessions per replica: ${[...used].map((a) => `${a}: ${Object.values(replicaOf).filter((s) => s.has(a)).length}`).join(', ')}`);
  check(pinned, 'every turn of a session reached the same replica');
  check(used.size >= 2, 'the sessions are spread over more than one replica');
  // The replicas' own counters agree with the header.
  let agree = true;
  for (let i = 1; i <= 3; i++) {
    const m = await request(P, 'GET', `/replica/${i}/metrics`);
    const chats = metric(m.body, 'tandem_http_requests_total{endpoint="/v1/chat/completions",status="200"}') || 0;
    const expected = turns * Object.values(replicaOf).filter((s) => s.has(`127.0.0.1:${P + i}`)).length;
    if (chats !== expected) agree = false;
  }
  check(agree, "each replica's /metrics counts the turns of exactly its sessions");
  // Without the header: least connections, as before.
  const plain = await Promise.all(Array.from({ length: 9 }, (_, k) =>
    request(P, 'POST', '/v1/completions', { prompt: 'p', max_tokens: 2, seed: k }, { agent: false })));
  check(plain.every(wholeOk), 'requests without X-Session-Id are served too');
}

async function main() {
  const timer = setTimeout(() => {
    log('FAIL: the cluster test ran past its 170 s bound');
    killAllClusters();
    process.exit(1);
  }, 170000);
  const mk = await run(tandem, ['make-model', '--shape', 'demo', '--out', model]);
  if (mk.code !== 0) fatal(`make-model: ${mk.stderr}`);
  const base = await freePorts();

  // The shipped example configuration is valid nginx.
  {
    const d = path.join(work, 'example');
    fs.mkdirSync(path.join(d, 'tmp'), { recursive: true });
    for (const f of ['tandem.conf', 'tandem-proxy.conf'])
      fs.copyFileSync(path.join(repo, 'deploy/nginx', f), path.join(d, f));
    fs.writeFileSync(path.join(d, 'nginx.conf'),
      `pid ${d}/nginx.pid; error_log ${d}/error.log; events {} http { client_body_temp_path ${d}/tmp; ` +
      `proxy_temp_path ${d}/tmp; fastcgi_temp_path ${d}/tmp; uwsgi_temp_path ${d}/tmp; scgi_temp_path ${d}/tmp; ` +
      `include ${d}/tandem.conf; }\n`);
    fs.writeFileSync(path.join(d, 'tandem.conf'),
      fs.readFileSync(path.join(d, 'tandem.conf'), 'utf8').replace('/var/log/nginx/tandem.log', `${d}/tandem.log`));
    const t = await run('nginx', ['-t', '-q', '-p', d, '-c', path.join(d, 'nginx.conf'), '-e', path.join(d, 'error.log')]);
    check(t.code === 0, 'deploy/nginx/tandem.conf passes nginx -t', t.stderr);
  }

  // A directory a cluster left behind (killed without its cleanup) names no running
  // cluster: rolling-restart says so at once instead of waiting on an nginx that is gone.
  {
    const d = path.join(work, 'stale');
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'cluster.env'), `replicas=2\ngrace=5\nnginx_pid_file=${d}/nginx.pid\n`);
    const r = await run('bash', [path.join(repo, 'scripts/rolling-restart'), '--dir', d]);
    check(r.code === 1 && r.stderr.includes('its nginx is not running'),
      'scripts/rolling-restart refuses a stale cluster directory', r.stderr);
  }

  const c = new Cluster('cluster', base, serveArgs);
  await c.ready();
  log(c.out.trim());
  for (let i = 1; i <= 3; i++)
    check((await request(base, 'GET', `/replica/${i}/health`)).status === 200, `replica ${i}'s /health through /replica/${i}/health`);
  await phaseLoad(c);
  const kill = await phaseKill(c);
  await phaseRollingRestart(c);
  // Ctrl-C in a terminal: SIGINT to the whole process group.
  check(await c.stop('SIGINT', true), 'Ctrl-C (SIGINT to the group) stops nginx and every replica; nothing left running');

  const a = new Cluster('affinity', base, ['--affinity', ...serveArgs]);
  await a.ready();
  await phaseAffinity(a);
  check(await a.stop('SIGTERM', false), 'SIGTERM to scripts/cluster stops nginx and every replica; nothing left running');
  clearTimeout(timer);
  log(`figures: failover (kill to process gone) ${kill.tGone - kill.tKill} ms; lost requests ${kill.lost} ` +
    `(all in flight on the killed replica); ${kill.retried} later requests resent by nginx after a refused connect`);
}

main().catch((e) => {
  if (!(e instanceof Fatal)) failures.push(String(e?.stack || e));
  log('FAIL', e instanceof Fatal ? e.message : e?.stack || e);
  for (const c of clusters) log(`${c.name} output:\n${c.out}`);
}).finally(() => {
  killAllClusters();
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    console.log(`cluster test: ${failures.length} failed check(s) in ${secs} s:\n  - ${failures.join('\n  - ')}`);
    process.exit(1);
  }
  console.log(`cluster test: all checks passed in ${secs} s`);
  process.exit(0);
});

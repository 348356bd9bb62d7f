// The speed baseline for bench/tokenizer_bench: HF tokenizers (Rust, npm @anush008/tokenizers) encoding every
// SpamAssassin email with encodeBatch. Prints {"seconds", "load_seconds", "bytes", "emails"} (best of REPS runs) and writes the
// ids and offsets of every email to OUT for berth to compare against.
// usage: node tokenizer_bench.mjs NODE_MODULES TOKENIZER_DIR OUT REPS
// Single-threaded when run with TOKENIZERS_PARALLELISM=false (RAYON_NUM_THREADS=1 also limits rayon's pool).
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const [modules, bertDir, out, repsArg] = process.argv.slice(2);
const require = createRequire(modules + '/');
const tk = require('@anush008/tokenizers');

const root = path.join(modules, '@stdlib', 'datasets-spam-assassin', 'data');
const texts = [];
for (const group of ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2']) {
  for (const file of fs.readdirSync(path.join(root, group)).filter((f) => f.endsWith('.json')).sort())
    texts.push(JSON.parse(fs.readFileSync(path.join(root, group, file), 'utf8')).text);
}
const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t, 'utf8'), 0);

const loadStart = process.hrtime.bigint();
const tokenizer = tk.Tokenizer.fromFile(path.join(bertDir, 'tokenizer.json'));
const loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;
let best = Infinity;
let encodings = null;
for (let rep = 0; rep < Number(repsArg); ++rep) {
  const start = process.hrtime.bigint();
  encodings = await tokenizer.encodeBatch(texts);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  best = Math.min(best, seconds);
}

// Binary: per email, uint32 count, then count ids, then count (start, end) pairs, all uint32 little-endian.
const chunks = [];
for (const e of encodings) {
  const ids = e.getIds();
  const offsets = e.getOffsets();
  const buffer = new Uint32Array(1 + ids.length * 3);
  buffer[0] = ids.length;
  buffer.set(ids, 1);
  for (let i = 0; i < offsets.length; ++i) {
    buffer[1 + ids.length + 2 * i] = offsets[i][0];
    buffer[2 + ids.length + 2 * i] = offsets[i][1];
  }
  chunks.push(Buffer.from(buffer.buffer));
}
fs.writeFileSync(out, Buffer.concat(chunks));
console.log(JSON.stringify({seconds: best, load_seconds: loadSeconds, bytes, emails: texts.length}));

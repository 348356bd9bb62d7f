// Asks HF tokenizers (Rust, via the npm binding) how it classifies every code point; one JSON line per code
// point that is not plain (gen_unicode_props.py turns this into src/tokenizer/unicode_props_data.inc).
// usage: node dump_rust_props.mjs NODE_MODULES_DIR CCC_CANDIDATES.json > props.jsonl
import { createRequire } from 'module';
import fs from 'fs';

const require = createRequire(process.argv[2] + '/');
const tk = require('@anush008/tokenizers');
const cccCandidates = new Set(JSON.parse(fs.readFileSync(process.argv[3], 'utf8')));

const clean = tk.bertNormalizer({cleanText: true, handleChineseChars: false, stripAccents: false, lowercase: false});
const chinese = tk.bertNormalizer({cleanText: false, handleChineseChars: true, stripAccents: false, lowercase: false});
// BertNormalizer's strip_accents: NFD, then drops what unicode_categories calls a nonspacing mark (not
// StripAccents, which drops every combining mark).
const stripAccents = tk.bertNormalizer({cleanText: false, handleChineseChars: false, stripAccents: true, lowercase: false});
const lower = tk.lowercase();
const nfd = tk.nfdNormalizer();
const pre = tk.bertPreTokenizer();
const codePoints = (s) => [...s].map((c) => c.codePointAt(0));

const lines = [];
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;  // not scalar values: Rust strings cannot hold them
  const ch = String.fromCodePoint(cp);
  const flags = [];
  const cleaned = clean.normalizeString(ch);
  if (cleaned === '') flags.push('remove');
  else if (cleaned === ' ') flags.push('clean_space');
  const splits = pre.preTokenizeString('a' + ch + 'a').length;
  if (splits === 2) flags.push('whitespace');
  if (splits === 3) flags.push('punct');
  const decomposed = nfd.normalizeString(ch);
  // Only characters NFD leaves alone can be told apart; the others never reach the filter themselves.
  if (decomposed === ch && stripAccents.normalizeString(ch) === '') flags.push('mark');
  if (chinese.normalizeString(ch) !== ch) flags.push('cjk');
  const entry = {cp};
  if (flags.length) entry.flags = flags;
  const lowered = lower.normalizeString(ch);
  if (lowered !== ch) entry.lower = codePoints(lowered);
  if (decomposed !== ch) entry.nfd = codePoints(decomposed);
  // U+0345 has combining class 240: a mark with a nonzero class below it moves in front of it under NFD.
  if (cccCandidates.has(cp)) entry.reorders = nfd.normalizeString('a\u0345' + ch) !== 'a\u0345' + ch;
  if (Object.keys(entry).length > 1) lines.push(JSON.stringify(entry));
}
process.stdout.write(lines.join('\n') + '\n');

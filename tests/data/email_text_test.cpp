// email_to_text and its parts: transfer encodings, charsets, HTML, MIME structure, garbage.
#include "berth/data/email_text.h"

#include <gtest/gtest.h>

#include <string>

#include "berth/data/charset.h"
#include "berth/data/html_text.h"
#include "berth/data/split_mix64.h"
#include "berth/data/transfer_encoding.h"

namespace {

using namespace berth::data;

TEST(TransferEncoding, QuotedPrintableSoftBreaksAndHexBytes) {
  EXPECT_EQ(decode_quoted_printable("caf=E9 =3D ok=\nnext line=  \r\nend"), "caf\xE9 = oknext lineend");
  EXPECT_EQ(decode_quoted_printable("lower =c3=a9 and bad =ZZ and final ="),
            "lower \xC3\xA9 and bad =ZZ and final ");
}

TEST(TransferEncoding, Base64IgnoresLineBreaksAndStopsAtPadding) {
  EXPECT_EQ(decode_base64("SGVsbG8s\r\nIHdvcmxk\nIQ=="), "Hello, world!");
  EXPECT_EQ(decode_base64("YWI="), "ab");
  EXPECT_EQ(decode_base64("YQ"), "a");
  EXPECT_EQ(decode_base64("Y*W#J\tj"), "abc");
}

TEST(Charset, Latin1AndWindows1252BecomeUtf8) {
  EXPECT_EQ(to_utf8("caf\xE9", "ISO-8859-1"), "caf\xC3\xA9");
  EXPECT_EQ(to_utf8("\x93quoted\x94 \x80", "\"windows-1252\""),
            "\xE2\x80\x9Cquoted\xE2\x80\x9D \xE2\x82\xAC");
  // Mail declared us-ascii (or nothing) that carries 8-bit bytes: valid UTF-8 stays, the rest is
  // windows-1252.
  EXPECT_EQ(to_utf8("caf\xC3\xA9", "us-ascii"), "caf\xC3\xA9");
  EXPECT_EQ(to_utf8("caf\xE9", ""), "caf\xC3\xA9");
}

TEST(Charset, OtherCharsetsPassThroughWithInvalidBytesReplaced) {
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(to_utf8("ok \xE2\x82\xAC", "utf-8"), "ok \xE2\x82\xAC");
  EXPECT_EQ(to_utf8("a\xFF"
                    "b",
                    "koi8-r"),
            "a" + fffd + "b");
  // Truncated sequence: one U+FFFD for the valid prefix, then the next character is kept.
  EXPECT_EQ(sanitize_utf8("\xE2\x82"
                          "A"),
            fffd + "A");
  // Overlong and surrogate encodings are refused byte by byte.
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), fffd + fffd);
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"), fffd + fffd + fffd);
  EXPECT_EQ(sanitize_utf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
}

TEST(HtmlText, TagsScriptsStylesAndCommentsGo) {
  EXPECT_EQ(html_to_text("<html><head><style>p {color: red}</style><script type=\"x\">if (a<b) {}</script>"
                         "</head><body><p>Hello <b>big</b> world</p><!-- hidden <p> --><div>Next&nbsp;line"
                         "</div><a href=\"x>y\">link</a></BODY></HTML>"),
            "Hello big world\nNext line\nlink");
}

TEST(HtmlText, EntitiesNamedNumericAndLegacy) {
  EXPECT_EQ(decode_html_entities(
                "&lt;b&gt; &amp; &quot;q&quot; &#233;&#xE9;&#X263a; &eacute; &copy &euro; &hellip;"),
            "<b> & \"q\" \xC3\xA9\xC3\xA9\xE2\x98\xBA \xC3\xA9 \xC2\xA9 \xE2\x82\xAC \xE2\x80\xA6");
  // HTML5: numeric 0x80-0x9F are windows-1252, 0 and out-of-range are U+FFFD; unknown names stay literal.
  EXPECT_EQ(decode_html_entities("&#150;&#0;&#x110000;&bogus; & x &#;"),
            "\xE2\x80\x93\xEF\xBF\xBD\xEF\xBF\xBD&bogus; & x &#;");
}

TEST(HtmlText, WhitespaceCollapsesAndStrayBracketsStay) {
  EXPECT_EQ(html_to_text("  a \t\n\n  b   c<br><br>d  "), "a\nb c\nd");
  EXPECT_EQ(html_to_text("1 < 2 and 3 > 2"), "1 < 2 and 3 > 2");
  EXPECT_EQ(html_to_text("<table><tr><td>a</td><td>b</td></tr></table>"), "a b");
  EXPECT_EQ(html_to_text("text <a href=\"never closed>more"), "text");
  EXPECT_EQ(html_to_text("x<script>unclosed"), "x");
}

TEST(EmailText, PlainMessageWithFoldedSubject) {
  const std::string email =
      "From someone@example.com  Thu Aug 22 12:36:23 2002\n"
      "Return-Path: <a@b>\n"
      "Subject: Hello\n"
      "\tthere\n"
      "\n"
      "Body line one.   \n"
      "\n\n\n"
      "Body line two.\n";
  EXPECT_EQ(email_to_text(email), "Hello there\nBody line one.\n\nBody line two.");
}

TEST(EmailText, EncodedSubjectWords) {
  EXPECT_EQ(decode_header_words("=?iso-8859-1?Q?Caf=E9_au_lait?= =?UTF-8?B?4oKs?= plain"),
            "Caf\xC3\xA9 au lait\xE2\x82\xAC plain");
  EXPECT_EQ(decode_header_words("=?bad"), "=?bad");
}

TEST(EmailText, QuotedPrintableLatin1Body) {
  const std::string email =
      "Subject: qp\r\n"
      "Content-Type: text/plain; charset=\"iso-8859-1\"\r\n"
      "Content-Transfer-Encoding: quoted-printable\r\n"
      "\r\n"
      "Caf=E9 prices are =\r\n"
      "soft-broken =3D fine.\r\n";
  EXPECT_EQ(email_to_text(email), "qp\nCaf\xC3\xA9 prices are soft-broken = fine.");
}

TEST(EmailText, AlternativePrefersPlainText) {
  const std::string email =
      "Subject: alt\n"
      "MIME-Version: 1.0\n"
      "Content-Type: multipart/alternative; boundary=\"XX\"\n"
      "\n"
      "This is a multi-part message in MIME format.\n"
      "--XX\n"
      "Content-Type: text/html\n"
      "\n"
      "<p>HTML version</p>\n"
      "--XX\n"
      "Content-Type: text/plain; charset=utf-8\n"
      "Content-Transfer-Encoding: base64\n"
      "\n"
      "UGxhaW4gdmVyc2lvbiDigqw=\n"
      "--XX--\n"
      "epilogue\n";
  EXPECT_EQ(email_to_text(email), "alt\nPlain version \xE2\x82\xAC");
}

TEST(EmailText, HtmlOnlyFallsBackToHtmlText) {
  const std::string email =
      "Subject: offer\n"
      "Content-Type: multipart/alternative; boundary=b1\n"
      "\n"
      "--b1\n"
      "Content-Type: text/html; charset=windows-1252\n"
      "Content-Transfer-Encoding: quoted-printable\n"
      "\n"
      "<html><body><h1>=93Free=94 money</h1><p>Click&nbsp;<a href=3D\"http://x\">here</a> &amp; win</p>=\n"
      "</body></html>\n"
      "--b1--\n";
  EXPECT_EQ(email_to_text(email),
            "offer\n\xE2\x80\x9C"
            "Free\xE2\x80\x9D money\nClick here & win");
}

TEST(EmailText, NestedMultipartsSkipAttachmentsAndBinaryParts) {
  const std::string email =
      "Subject: nested\n"
      "Content-Type: multipart/mixed; boundary=\"outer\"\n"
      "\n"
      "--outer\n"
      "Content-Type: multipart/alternative; boundary=\"inner\"\n"
      "\n"
      "--inner\n"
      "Content-Type: text/plain\n"
      "\n"
      "inner plain\n"
      "--inner\n"
      "Content-Type: text/html\n"
      "\n"
      "<b>inner html</b>\n"
      "--inner--\n"
      "--outer\n"
      "Content-Type: image/gif; name=\"a.gif\"\n"
      "Content-Transfer-Encoding: base64\n"
      "\n"
      "R0lGODlhAQABAIAAAP///wAAACwAAAAAAQABAAACAkQBADs=\n"
      "--outer\n"
      "Content-Type: text/plain; name=\"notes.txt\"\n"
      "Content-Disposition: attachment; filename=\"notes.txt\"\n"
      "\n"
      "attached text\n"
      "--outer\n"
      "Content-Type: text/plain\n"
      "\n"
      "footer\n"
      "--outer--\n";
  EXPECT_EQ(email_to_text(email), "nested\ninner plain\nfooter");
}

TEST(EmailText, ForwardedMessageAndMissingBoundary) {
  const std::string forwarded =
      "Subject: fwd\n"
      "Content-Type: multipart/mixed; boundary=\"m\"\n"
      "\n"
      "--m\n"
      "Content-Type: message/rfc822\n"
      "\n"
      "Subject: inner\n"
      "Content-Type: text/plain\n"
      "\n"
      "inner body\n"
      "--m--\n";
  EXPECT_EQ(email_to_text(forwarded), "fwd\ninner body");
  EXPECT_EQ(email_to_text("Subject: s\nContent-Type: multipart/mixed\n\nraw body\n"), "s\nraw body");
  EXPECT_EQ(email_to_text("Subject: only\n"), "only");
  EXPECT_EQ(email_to_text("no headers at all\nsecond line"), "no headers at all\nsecond line");
}

TEST(EmailText, DeepNestingIsBounded) {
  // 50 nested multiparts: the text below the depth limit is dropped, nothing recurses without end.
  std::string email = "Subject: deep\n";
  for (int i = 0; i < 50; ++i)
    email += "Content-Type: multipart/mixed; boundary=\"b" + std::to_string(i) + "\"\n\n--b" +
             std::to_string(i) + "\n";
  email += "Content-Type: text/plain\n\ntoo deep\n";
  EXPECT_EQ(email_to_text(email), "deep");
}

TEST(EmailText, GarbageNeverThrowsAndGivesValidUtf8) {
  SplitMix64 rng(2024);
  const std::string pieces[] = {"--b\n",
                                "Content-Type: multipart/mixed; boundary=b\n",
                                "\n",
                                "=?",
                                "?Q?",
                                "?=",
                                "=E9",
                                "<",
                                ">",
                                "<script>",
                                "&#x",
                                ";",
                                "\"",
                                "\xFF",
                                "\xC3",
                                "Content-Transfer-Encoding: base64\n",
                                "Content-Transfer-Encoding: quoted-printable\n",
                                "Content-Type: text/html\n",
                                "=\n",
                                "abc "};
  for (int round = 0; round < 300; ++round) {
    std::string email;
    const uint64_t length = rng.below(200);
    for (uint64_t i = 0; i < length; ++i) email += pieces[rng.below(std::size(pieces))];
    std::string text;
    EXPECT_NO_THROW(text = email_to_text(email));
    EXPECT_EQ(sanitize_utf8(text), text) << "round " << round;
  }
}

}  // namespace

// The text of a raw RFC 822 / MIME email, as a classifier should see it: the subject and the readable body.
#pragma once

#include <string>
#include <string_view>

namespace berth::data {

// "<Subject>\n<body>" in UTF-8 (just the body when there is no subject):
// - headers unfolded; the Subject's RFC 2047 encoded words (=?charset?Q|B?...?=) decoded;
// - MIME: multipart/alternative takes its text/plain alternative, else its text/html one; other multiparts
//   join the text of all their parts; nested multiparts and message/rfc822 parts are followed (at most 8
//   levels); attachments (Content-Disposition: attachment) and non-text parts are skipped;
// - Content-Transfer-Encoding quoted-printable and base64 decoded, then the part's charset (see to_utf8);
// - text/html through html_to_text;
// - trailing spaces dropped from every line, runs of blank lines reduced to one, the whole trimmed.
// Anything can be passed in: garbage gives some text (maybe empty), never an exception; work is linear in the
// input's size times the nesting depth.
std::string email_to_text(std::string_view raw_email);

// Decodes RFC 2047 encoded words in a header value: "=?iso-8859-1?Q?caf=E9?=" -> "café"; whitespace between
// two encoded words is dropped; malformed words are kept as they are. The result is valid UTF-8.
std::string decode_header_words(std::string_view value);

}  // namespace berth::data

// The readable text of an HTML document (an email's text/html part), for classification.
#pragma once

#include <string>
#include <string_view>

namespace berth::data {

// Drops <script>/<style> elements, comments, declarations and every tag (block tags such as <p>, <br>, <div>,
// <li>, <tr> end a line; <td>/<th> become a space), decodes character references (the common named ones and
// every &#N; / &#xH;, with HTML5's rules for invalid numbers), then collapses whitespace: a run holding a
// line break becomes one "\n", any other run one space. Linear in the input; never throws on malformed HTML
// (an unclosed tag or attribute quote swallows the rest, as browsers do). Input and output are UTF-8.
std::string html_to_text(std::string_view html);

// Decodes the character references of `text` alone (no tags): "&lt;b&gt; &#233;" -> "<b> é".
std::string decode_html_entities(std::string_view text);

}  // namespace berth::data

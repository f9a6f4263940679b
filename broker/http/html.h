// Escaping for the web view: every string that reaches HTML (team names,
// job ids, reasons: all chosen by users) goes through HtmlEscape, and every
// one that reaches a URL through UrlEncode.
//
// Pure.
#ifndef TIDEGATE_BROKER_HTTP_HTML_H_
#define TIDEGATE_BROKER_HTTP_HTML_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tidegate::http {

// & < > " ' as character references; safe in text and in quoted attributes.
std::string HtmlEscape(std::string_view text);
// Percent-encodes everything but RFC 3986's unreserved characters.
std::string UrlEncode(std::string_view text);
// "2026-01-05 08:00:00 UTC" for Unix milliseconds; "-" for 0.
std::string UtcTime(int64_t unix_ms);

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_HTML_H_

// The web view's static files, compiled in (no frontend build step, nothing
// to install beside the binary): a style sheet and a script that swaps in
// the live part of a page when the broker says it changed.
#ifndef TIDEGATE_BROKER_HTTP_ASSETS_H_
#define TIDEGATE_BROKER_HTTP_ASSETS_H_

namespace tidegate::http {

extern const char kStyleCss[];
// Reads body[data-watch] and body[data-version]; asks
// `WATCH&since=VERSION`, which answers {version, html} once the page differs
// (or after a timeout), swaps <main id="live"> and asks again a second
// later. `?watch=0` in the page's address turns it off.
extern const char kAppJs[];

}  // namespace tidegate::http

#endif  // TIDEGATE_BROKER_HTTP_ASSETS_H_

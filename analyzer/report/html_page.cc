#include "analyzer/report/html_page.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "analyzer/report/html_assets.h"
#include "analyzer/report/json_writer.h"
#include "analyzer/report/text_cat.h"

namespace idlescope {
namespace {

// The busy colour must not be any cause's (causes.def checks the causes among themselves).
static_assert(std::none_of(kCauseInfo.begin(), kCauseInfo.end(),
                           [](const CauseInfo& c) { return c.color == kBusyColor; }),
              "causes.def: a cause has the colour of busy time (report/html_page.h kBusyColor)");

}  // namespace

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : ValidUtf8(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HtmlPageStart(std::string_view title) {
  return Cat(
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // No request may leave the page, not even for a favicon.
      "<link rel=\"icon\" href=\"data:,\">\n<title>",
      HtmlEscape(title), "</title>\n<style>\n", kHtmlPageCss,
      "</style>\n</head>\n<body>\n<main>\n");
}

std::string HtmlPageEnd(std::string_view scripts) {
  return Cat("</main>\n<div id=\"tip\"></div>\n", scripts, "</body>\n</html>\n");
}

std::string HtmlBar(double fraction, std::string_view color) {
  double percent = std::clamp(fraction, 0.0, 1.0) * 100;
  // A sliver still shows: at least one pixel.
  return absl::StrFormat(
      "<span class=\"bar\" style=\"width:%.1f%%;min-width:%dpx;background:%s\"></span>", percent,
      fraction > 0 ? 1 : 0, color);
}

}  // namespace idlescope

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

// In the order of enum Cause: related causes in related hues (data movement warm, the model's
// own causes blue, the job's lifecycle grey), unexplained time light grey.
constexpr std::array<std::string_view, kCauseCount> kCauseColors = {
    "#f28e2b",  // host_gpu_transfer
    "#8e6bbf",  // communication
    "#9c6b30",  // checkpointing
    "#d4a6c8",  // intermediate_upload
    "#e15759",  // data_loading
    "#ff9da7",  // external_download
    "#b07aa1",  // library_installation
    "#edc948",  // interactive
    "#4e79a7",  // synchronization
    "#76b7b2",  // small_batch
    "#59a14f",  // insufficient_memory
    "#86bcb6",  // launch_bound
    "#8c8c8c",  // startup
    "#b6b6b6",  // tail
    "#d9d9d9",  // unknown
    "#4d4d4d",  // unused_gpus
    "#6b6b6b",  // no_gpu_work
};

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

std::string ScriptJsonString(std::string_view text) {
  std::string out;
  AppendJsonString(&out, text, /*in_script=*/true);
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

std::string_view CauseColor(Cause cause) { return kCauseColors[Index(cause)]; }

std::string HtmlBar(double fraction, std::string_view color, int width_px) {
  double px = std::clamp(fraction, 0.0, 1.0) * width_px;
  return absl::StrFormat("<span class=\"bar\" style=\"width:%.1fpx;background:%s\"></span>",
                         std::max(px, fraction > 0 ? 1.0 : 0.0), color);
}

}  // namespace idlescope

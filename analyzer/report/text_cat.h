// absl::StrCat and absl::StrAppend that also take std::string_view: this abseil build's
// string_view is its own type (ABSL_OPTION_USE_STD_STRING_VIEW is 0), and the report model's
// names (CauseInfo, GapKindName, ...) are std::string_views.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace idlescope {

template <typename T>
decltype(auto) CatPiece(const T& v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(v.data(), v.size());
  } else {
    return (v);
  }
}

template <typename... T>
std::string Cat(const T&... v) {
  return absl::StrCat(CatPiece(v)...);
}

template <typename... T>
void CatTo(std::string* out, const T&... v) {
  absl::StrAppend(out, CatPiece(v)...);
}

}  // namespace idlescope

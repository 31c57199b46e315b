#include "analyzer/model/findings.h"

namespace idlescope {
namespace {

// Each row of findings.def, checked where it stands: the message names the kind.
#define IDLESCOPE_FINDING(id, ...)                          \
  static_assert(!FindingKindInfo{__VA_ARGS__}.name.empty(), \
                "findings.def: " #id " needs .name (its JSON kind)");
#include "analyzer/model/findings.def"
#undef IDLESCOPE_FINDING

constexpr bool NamesDistinct() {
  for (size_t i = 0; i < kFindingKindInfo.size(); ++i) {
    for (size_t j = i + 1; j < kFindingKindInfo.size(); ++j) {
      if (kFindingKindInfo[i].name == kFindingKindInfo[j].name) return false;
    }
  }
  return true;
}
static_assert(NamesDistinct(), "findings.def: two kinds have the same .name");

}  // namespace
}  // namespace idlescope

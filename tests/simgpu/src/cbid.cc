#include "cbid.h"

#include <string>
#include <unordered_map>

namespace simgpu {
namespace {

struct Entry {
  const char* name;
  uint32_t id;
};

#include "cbid_tables.inc"  // kRuntimeCbids[], kDriverCbids[]

using Table = std::unordered_map<std::string, uint32_t>;

template <size_t N>
const Table* Build(const Entry (&entries)[N]) {
  auto* t = new Table();  // leaked: looked up until the last API call of the process
  for (const Entry& e : entries) (*t)[e.name] = e.id;  // later (newer) versions win
  return t;
}

uint32_t Find(const Table& t, const char* name) {
  auto it = t.find(name);
  return it == t.end() ? 0 : it->second;
}

}  // namespace

uint32_t RuntimeCbid(const char* name) {
  static const Table* t = Build(kRuntimeCbids);
  return Find(*t, name);
}

uint32_t DriverCbid(const char* name) {
  static const Table* t = Build(kDriverCbids);
  return Find(*t, name);
}

}  // namespace simgpu

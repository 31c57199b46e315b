#include "analyzer/read/socket_addresses.h"

#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "analyzer/model/socket_address.h"
#include "analyzer/trace/interned_data.h"
#include "analyzer/trace/trace_reader.h"

namespace idlescope {

std::vector<std::string> ReadSocketAddressKeys(const std::string& path) {
  std::vector<std::string> keys;
  absl::StatusOr<std::unique_ptr<TraceFileReader>> reader = TraceFileReader::Open(path, 32 << 10);
  if (!reader.ok()) return keys;
  (*reader)->KeepRuns();  // a run holds launches only
  const std::string host = (*reader)->header().host();
  InternedData interned;
  absl::flat_hash_set<std::string> seen;
  Packet packet;
  while ((*reader)->stats().bytes_read < kSocketScanBytes && (*reader)->Next(&packet)) {
    if (packet.has_interned()) {
      interned.Add(packet.interned());
      continue;
    }
    if (!packet.has_events()) continue;
    for (const Event& ev : packet.events().events()) {
      if (ev.type() != NET_SOCKET || ev.local() == 0) continue;
      if (ev.launches_size() > 0 && (*reader)->keeps_runs()) continue;
      const absl::string_view local = interned.String(ev.local());
      // An unnamed unix socket names no one (its peer pid does, in the records).
      if (local.empty() || local == "unix:") continue;
      std::string key = SocketAddressKey(host, std::string_view(local.data(), local.size()));
      if (seen.insert(key).second) keys.push_back(std::move(key));
    }
  }
  return keys;
}

}  // namespace idlescope

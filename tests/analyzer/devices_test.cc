// The devices stage on its own (analysis/devices.h): device identity, links to processes,
// launching threads, memory, unused visible devices.
#include "analyzer/analysis/devices.h"

#include <gtest/gtest.h>

#include "analyzer/analysis/device_result.h"

namespace idlescope {
namespace {

ProcessInfo Info(std::string host, int32_t rank = -1, std::string visible = "") {
  ProcessInfo info;
  info.host = std::move(host);
  info.rank = rank;
  info.cuda_visible_devices = std::move(visible);
  return info;
}

DeviceProps Props(uint32_t ordinal, std::string uuid, uint32_t visible = 1) {
  DeviceProps props;
  props.ordinal = ordinal;
  props.uuid = std::move(uuid);
  props.sm_count = 132;
  props.total_memory = 80ull << 30;
  props.visible_devices = visible;
  return props;
}

TEST(Devices, IdentityIsTheUuidElseTheVisibleEntryElseTheOrdinal) {
  JobDevices d(1'000'000);
  d.AddProcess(0, Info("node0", 0));
  d.AddProcess(1, Info("node0", 1));
  d.AddProcess(2, Info("node0", 2, "3,5"));
  d.AddProcess(3, Info("node1"));
  d.AddDeviceInfo(0, Props(0, "GPU-a"));
  d.AddDeviceInfo(1, Props(1, "GPU-a"));  // the same GPU, another ordinal
  bool linked = false;
  uint32_t a = d.DeviceFor(0, 0, &linked);
  EXPECT_TRUE(linked);
  EXPECT_EQ(d.DeviceFor(1, 1, &linked), a);
  EXPECT_TRUE(linked);  // a second process on it
  linked = false;
  EXPECT_EQ(d.DeviceFor(0, 0, &linked), a);
  EXPECT_FALSE(linked);
  EXPECT_EQ(d[a].id, "node0/GPU-a");
  EXPECT_EQ(d[a].rank, 0);
  EXPECT_EQ(d[a].processes.size(), 2u);
  EXPECT_TRUE(d[a].has_props);
  uint32_t visible = d.DeviceFor(2, 1, &linked);
  EXPECT_EQ(d[visible].id, "node0/5");
  uint32_t bare = d.DeviceFor(3, 2, &linked);
  EXPECT_EQ(d[bare].id, "node1/2");
  EXPECT_EQ(d.size(), 3u);
  // DeviceInfo after first use still gives the device its properties.
  d.AddDeviceInfo(3, Props(2, ""));
  EXPECT_TRUE(d[bare].has_props);
}

TEST(Devices, LaunchersAllocationsAndRelinking) {
  JobDevices d(1'000'000);
  d.AddProcess(0, Info("node0", -1));
  d.AddProcess(1, Info("node0", 4));
  bool linked = false;
  uint32_t dev = d.DeviceFor(0, 0, &linked);
  EXPECT_EQ(d[dev].rank, -1);
  EXPECT_TRUE(d.NewLauncher(0, 100, 0));
  EXPECT_FALSE(d.NewLauncher(0, 100, 0));  // the same thread and device: nothing new
  EXPECT_TRUE(d.NewLauncher(0, 101, 0));
  EXPECT_TRUE(d.NewLauncher(0, 101, 1));
  d.Allocate(0, dev, 0x10, 30ull << 30);
  d.Allocate(0, dev, 0x20, 10ull << 30);
  d.Free(0, 0x10);
  d.Free(0, 0x99);  // never allocated while traced
  d.Allocate(0, dev, 0x30, 5ull << 30);
  EXPECT_EQ(d[dev].timeline.peak_memory(), int64_t{40} << 30);
  EXPECT_TRUE(d.Link(dev, 1));
  EXPECT_FALSE(d.Link(dev, 1));
  EXPECT_EQ(d[dev].rank, 4);  // the first process with a rank
  auto links = d.Unlink();
  EXPECT_EQ(links.size(), 2u);
  EXPECT_TRUE(d[dev].processes.empty());
}

TEST(Devices, UnusedVisibleDevicesPerHost) {
  // node0: a process that could see 4 devices used one; node1: two processes with three
  // CUDA_VISIBLE_DEVICES entries; node2: a process that could see nothing.
  const std::vector<ProcessInfo> processes = {Info("node0"), Info("node1", -1, "0,1,2"),
                                              Info("node1", -1, "2"), Info("node2")};
  const std::vector<uint32_t> visible = {4, 0, 1, 0};
  DeviceResult used;
  used.id = "node0/GPU-a";
  used.host = "node0";
  UnusedVisibleByHost unused = UnusedVisibleOnHosts(processes, visible, {used});
  EXPECT_EQ(unused["node0"], 3u);
  EXPECT_EQ(unused["node1"], 3u);  // three distinct entries, none used
  EXPECT_EQ(unused["node2"], 0u);
  DeviceResult other;
  other.id = "node1/1";
  other.host = "node1";
  unused = UnusedVisibleOnHosts(processes, visible, {used, other});
  EXPECT_EQ(unused["node1"], 2u);
  EXPECT_FALSE(unused.contains("node9"));
}

}  // namespace
}  // namespace idlescope

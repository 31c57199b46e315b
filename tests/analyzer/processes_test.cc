// The processes stage on its own (analysis/processes.h): families, workers, installers and how
// each installer was launched, from process infos and launch events built here.
#include "analyzer/analysis/processes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/analyzer/job_builder.h"

namespace idlescope::testing {
namespace {

ProcessInfo Info(uint32_t pid, uint32_t ppid, std::string exe = "python",
                 std::string cmdline = "python train.py", std::string host = "node0",
                 bool forked = false) {
  ProcessInfo info;
  info.pid = pid;
  info.ppid = ppid;
  info.exe = std::move(exe);
  info.cmdline = std::move(cmdline);
  info.host = std::move(host);
  info.forked = forked;
  return info;
}

bool Has(const std::vector<uint32_t>& v, uint32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(Processes, FamiliesAreAncestorsAndDescendantsOnTheSameHost) {
  JobProcesses p;
  p.Add(Info(100, 1));                                          // 0: the trainer
  p.Add(Info(101, 100));                                        // 1: its child
  p.Add(Info(102, 101));                                        // 2: a grandchild
  p.Add(Info(200, 1));                                          // 3: unrelated
  p.Add(Info(101, 100, "python", "python train.py", "node1"));  // 4: same pid, other host
  p.BuildFamilies();
  EXPECT_EQ(p[2].parent, 1);
  EXPECT_TRUE(Has(p[0].family, 0) && Has(p[0].family, 1) && Has(p[0].family, 2));
  EXPECT_FALSE(Has(p[0].family, 3));
  EXPECT_FALSE(Has(p[0].family, 4));
  EXPECT_TRUE(Has(p[2].family, 0));  // ancestors too
  EXPECT_EQ(p[3].family, std::vector<uint32_t>{3});
  // A device used by the grandchild may be explained by the whole family.
  p.NoteDeviceUse(2, 7);
  EXPECT_TRUE(Has(p[0].devices, 7) && Has(p[1].devices, 7) && Has(p[2].devices, 7));
  EXPECT_TRUE(p[3].devices.empty());
  p.NoteDeviceUse(0, 7);  // once each
  EXPECT_EQ(p[0].devices.size(), 1u);
}

TEST(Processes, AProcessThatDrivesADeviceExplainsOnlyItsOwn) {
  JobProcesses p;
  p.Add(Info(50, 1, "python", "python launch.py"));                              // 0: launcher
  p.Add(Info(100, 50));                                                          // 1: rank 0
  p.Add(Info(101, 100, "python", "python train.py", "node0", /*forked=*/true));  // 2: rank 1
  p.Add(Info(102, 100, "python", "python train.py", "node0", true));  // 3: rank 0's worker
  p.Add(Info(103, 101, "python", "python train.py", "node0", true));  // 4: rank 1's worker
  p.BuildFamilies();
  p.NoteDeviceUse(1, 0);
  p.NoteDeviceUse(2, 1);
  EXPECT_EQ(p[1].devices, std::vector<uint32_t>{0});  // not its forked rank's device 1
  EXPECT_EQ(p[2].devices, std::vector<uint32_t>{1});  // not its parent's device 0
  EXPECT_EQ(p[3].devices, std::vector<uint32_t>{0});  // its nearest driving ancestor's
  EXPECT_EQ(p[4].devices, std::vector<uint32_t>{1});
  EXPECT_TRUE(Has(p[0].devices, 0) && Has(p[0].devices, 1));  // the launcher: its ranks'
  // A process that later drives a device of its own stops explaining its ancestor's.
  p.NoteDeviceUse(3, 2);
  EXPECT_EQ(p[3].devices, std::vector<uint32_t>{2});
  EXPECT_EQ(p[1].devices, std::vector<uint32_t>{0});
}

TEST(Processes, WorkersAreForkedCopiesThatDidNotExec) {
  JobProcesses p;
  p.Add(Info(100, 1));                                                           // 0
  p.Add(Info(101, 100, "python", "python train.py", "node0", /*forked=*/true));  // 1: a worker
  p.Add(Info(102, 100, "python", "python train.py", "node0", true));  // 2: forked, then exec'd:
  p.Add(Info(102, 100, "/bin/ls", "ls -l"));                          // 3: its exec'd twin
  p.BuildFamilies();
  EXPECT_TRUE(p[1].worker);
  EXPECT_FALSE(p[2].worker);
  EXPECT_FALSE(p[3].worker);
  EXPECT_TRUE(p[0].has_workers);
  EXPECT_EQ(p[0].main_tid(), 100u);
}

TEST(Processes, InstallersCoverTheirDescendantsAndOnlyTheOutermostHasASpan) {
  JobProcesses p;
  p.Add(Info(100, 1));                                              // 0: the job
  p.Add(Info(150, 100, "/usr/bin/pip", "pip install torch"));       // 1: pip
  p.Add(Info(151, 150, "/usr/bin/gcc", "gcc -c x.c"));              // 2: its compiler
  p.Add(Info(152, 151, "/usr/bin/pip", "pip install wheel"));       // 3: a nested pip
  p.Add(Info(160, 100, "/usr/bin/python3", "python3 prepare.py"));  // 4: not an installer
  p.BuildFamilies();
  EXPECT_TRUE(p[1].installer && p[1].in_installer);
  EXPECT_TRUE(!p[2].installer && p[2].in_installer);
  EXPECT_TRUE(p[3].in_installer);
  EXPECT_FALSE(p[4].in_installer);
  ASSERT_EQ(p.installer_spans().size(), 1u);
  EXPECT_EQ(p.installer_spans()[0].process, 1u);
  EXPECT_EQ(p.installer_spans()[0].cause, Cause::kLibraryInstallation);
}

TEST(Processes, AnInstallerIsNamedByTheExecThatStartedItWithThatCallsStack) {
  JobProcesses p;
  p.Add(Info(100, 1, "/job/train", "train"));                                    // 0
  p.Add(Info(150, 100, "python", "python train.py", "node0", /*forked=*/true));  // 1: fork copy
  p.Add(Info(150, 100, "/bin/dash", "sh /opt/fake/pip install -r requirements.txt"));  // 2
  p.BuildFamilies();
  HostEvent fork_event;
  fork_event.process = 0;
  fork_event.type = PROC_FORK;
  fork_event.child_pid = 150;
  fork_event.stack = 7;
  p.NoteLaunch(fork_event);
  const JobProcesses::Launch* launch = p.LaunchOf(2);
  ASSERT_NE(launch, nullptr);  // pid 150 is an installer: its fork is kept
  EXPECT_EQ(launch->stack, 7u);
  EXPECT_EQ(p.InstallerCommand(2), "sh /opt/fake/pip install -r requirements.txt");
  HostEvent exec_event;
  exec_event.process = 1;
  exec_event.type = PROC_EXEC;
  exec_event.path = "/opt/fake/pip";
  exec_event.argv = std::string_view("pip\0install\0-r\0requirements.txt", 31);
  exec_event.stack = 9;
  p.NoteLaunch(exec_event);
  EXPECT_EQ(launch->stack, 9u);  // the exec's stack is preferred to the fork's
  EXPECT_EQ(launch->stack_process, 1u);
  EXPECT_EQ(p.InstallerCommand(2), "pip install -r requirements.txt");
  // A fork of a program that is no installer is not kept.
  HostEvent other = fork_event;
  other.child_pid = 999;
  p.NoteLaunch(other);
  p.Add(Info(999, 100, "/bin/ls", "ls"));
  EXPECT_EQ(p.LaunchOf(3), nullptr);
}

TEST(Processes, LabelsSpanEndAndImageParent) {
  EXPECT_EQ(ProgramLabel("/usr/bin/pip", std::string_view("/usr/bin/pip\0install\0x", 23)),
            "pip install x");
  EXPECT_EQ(ProgramLabel("/usr/bin/pip", ""), "pip");
  EXPECT_EQ(ProgramLabel("x", std::string(300, 'a')).size(), 200u);
  EXPECT_EQ(CommandLabel(Info(1, 0, "/usr/bin/python3", "/usr/bin/python3 -m pip install x")),
            "python3 -m pip install x");
  JobProcesses p;
  ProcessInfo a = Info(100, 1);
  a.start = Ms(10);
  p.Add(a);
  ProcessInfo b = Info(150, 100, "python", "python train.py", "node0", true);
  b.start = Ms(5);
  p.Add(b);
  p.Add(Info(150, 100, "/bin/ls", "ls"));  // the exec'd twin of pid 150
  p.Add(Info(151, 150));
  p.BuildFamilies();
  EXPECT_EQ(p.JobStart(), 0);  // the twin started at 0
  p.Seen(0, Ms(50));
  p.End(1, Ms(70));
  EXPECT_EQ(p[0].End(), Ms(50));
  EXPECT_EQ(p[1].End(), Ms(70));
  EXPECT_EQ(p.JobEnd(0), Ms(70));
  EXPECT_EQ(p[3].parent, 1);           // families: the first process with the ppid
  EXPECT_EQ(p.ImageParent(3), &p[2]);  // programs: the newest image of that pid
}

}  // namespace
}  // namespace idlescope::testing

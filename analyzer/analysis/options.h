// What the analysis can be asked to do differently (idlescope report's options).
#pragma once

#include <cstddef>
#include <string>

#include "analyzer/model/job_model.h"

namespace idlescope {

struct AnalysisOptions {
  // Idle gaps shorter than this are not sliced: they count as launch-bound / batch-size idle.
  Ns min_gap = 1'000'000;  // 1 ms
  size_t top_gaps = 10;
  size_t top_evidence = 5;
  // false: evidence stacks as they read without Python stacks (IDLESCOPE_PYTHON_STACKS=0).
  bool python_frames = true;
  // The window is moved on at most once per this much trace time (cost vs. memory).
  Ns advance_quantum = 20'000'000;  // 20 ms
  // The job's steps are the NVTX ranges of this name (StepMarkerName form: "ProfilerStep"), not
  // the name with the most ranges; "": any (analysis/steps.h).
  std::string step_marker = {};
};

}  // namespace idlescope

// IntervalUnion: the union of intervals that arrive in near time order, consumed in time order.
//
// A device's busy time is the union of its kernels over all streams (docs/attribution.md,
// "Timeline and utilization": never sum per-stream gaps). CUPTI delivers kernels of different
// streams out of start order, and the job's files are merged by time only approximately, so the
// union keeps an open window of disjoint intervals. Seal(t) hands out, in time order, every busy
// interval before t and forgets it: memory is bounded by the reorder window, not by the trace
// length. An interval that arrives for time already sealed is late: its sealed part is dropped and
// counted (the report warns).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "analyzer/model/job_model.h"

namespace idlescope {

class IntervalUnion {
 public:
  static constexpr Ns kNever = std::numeric_limits<Ns>::min();

  // Adds [start, end). Empty intervals are ignored.
  void Add(Ns start, Ns end) {
    if (start < sealed_until_) {
      if (end > start) {
        ++late_records_;
        late_ns_ += std::min(end, sealed_until_) - start;
      }
      start = sealed_until_;
    }
    if (end <= start) return;
    // Fast path: the common case is an interval at or after the last one.
    if (head_ == open_.size() || start > open_.back().end) {
      open_.push_back({start, end});
      return;
    }
    if (start >= open_.back().start) {
      open_.back().end = std::max(open_.back().end, end);
      return;
    }
    InsertSlow(start, end);
  }

  // Calls emit(Interval) for every part of the union before `until`, in time order, and forgets
  // it. An interval that straddles `until` is split there.
  template <typename Emit>
  void Seal(Ns until, Emit&& emit) {
    if (until <= sealed_until_) return;
    while (head_ < open_.size()) {
      Interval& first = open_[head_];
      if (first.end <= until) {
        emit(first);
        ++head_;
      } else {
        if (first.start < until) {
          emit(Interval{first.start, until});
          first.start = until;
        }
        break;
      }
    }
    sealed_until_ = until;
    if (head_ > 1024 && head_ * 2 > open_.size()) {
      open_.erase(open_.begin(), open_.begin() + static_cast<ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  Ns sealed_until() const { return sealed_until_; }
  size_t open_intervals() const { return open_.size() - head_; }
  uint64_t late_records() const { return late_records_; }
  Ns late_ns() const { return late_ns_; }

 private:
  void InsertSlow(Ns start, Ns end) {
    auto first = open_.begin() + static_cast<ptrdiff_t>(head_);
    // The first interval that ends at or after `start` is the first one it can touch.
    auto it = std::lower_bound(first, open_.end(), start,
                               [](const Interval& iv, Ns t) { return iv.end < t; });
    if (it == open_.end() || it->start > end) {
      open_.insert(it, Interval{start, end});
      return;
    }
    // Merge [start, end) with every interval it touches: it .. last.
    auto last = it;
    while (last + 1 != open_.end() && (last + 1)->start <= end) ++last;
    it->start = std::min(it->start, start);
    it->end = std::max(last->end, end);
    open_.erase(it + 1, last + 1);
  }

  std::vector<Interval> open_;  // open_[head_..]: sorted, disjoint, not touching
  size_t head_ = 0;
  Ns sealed_until_ = kNever;
  uint64_t late_records_ = 0;
  Ns late_ns_ = 0;
};

}  // namespace idlescope

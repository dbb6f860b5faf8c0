// A small thread splitter for the tensor entry points that take posemb::Threads: threads
// started per call, or the tasks of a caller's pool (posemb::ParallelFor).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "posemb/tensor.hpp"

namespace posemb {
namespace detail {

// ---------------------------------------------------------------------------------------------
// Threads

// Elements (of any storage type) below which a worker thread costs more than it saves:
// starting and joining a std::thread takes ~10-50 us, in which one core moves ~1 MiB.
inline constexpr Eigen::Index min_elements_per_thread = Eigen::Index(1) << 18;

// The same for a task of a caller's pool, whose threads already run: handing a task to a
// waiting thread costs a few microseconds, in which one core moves ~64 KiB.
inline constexpr Eigen::Index min_elements_per_task = Eigen::Index(1) << 15;

// How many threads to use for `elements` elements when the caller allows `requested`.
inline int threads_for(Eigen::Index elements, int requested,
                       Eigen::Index min_elements = min_elements_per_thread) {
  const Eigen::Index useful = std::max<Eigen::Index>(1, elements / min_elements);
  return static_cast<int>(std::min<Eigen::Index>(std::max(requested, 1), useful));
}

// How many parts `threads` splits `elements` elements into.
inline int parts_for(Eigen::Index elements, const Threads& threads) {
  return threads_for(elements, threads.count,
                     threads.pool ? min_elements_per_task : min_elements_per_thread);
}

// Calls body(begin, end) on `threads` contiguous parts of [0, count): parts 1.. on new threads,
// part 0 on the calling thread. body must not throw. If a thread cannot be started, its part
// runs on the calling thread.
template <class Body>
void parallel_for(Eigen::Index count, int threads, const Body& body) {
  threads = static_cast<int>(std::min<Eigen::Index>(std::max(threads, 1), std::max<Eigen::Index>(count, 1)));
  if (threads == 1) {
    body(Eigen::Index(0), count);
    return;
  }
  const auto part_begin = [&](int part) { return count * part / threads; };
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  for (int part = 1; part < threads; ++part) {
    try {
      workers.emplace_back([&body, begin = part_begin(part), end = part_begin(part + 1)] {
        body(begin, end);
      });
    } catch (...) {  // std::system_error: no thread; do the part here
      body(part_begin(part), part_begin(part + 1));
    }
  }
  body(part_begin(0), part_begin(1));
  for (auto& worker : workers) worker.join();
}

// Calls body(begin, end) on `parts` contiguous parts of [0, count): as above without a pool;
// with threads.pool, as its tasks (a single part runs on the calling thread).
template <class Body>
void parallel_for(Eigen::Index count, int parts, const Threads& threads, const Body& body) {
  parts = static_cast<int>(std::min<Eigen::Index>(std::max(parts, 1), std::max<Eigen::Index>(count, 1)));
  if (!threads.pool || parts == 1) {
    parallel_for(count, parts, body);
    return;
  }
  threads.pool(static_cast<std::size_t>(parts), [&](std::size_t part) {
    const auto p = static_cast<Eigen::Index>(part);
    body(count * p / parts, count * (p + 1) / parts);
  });
}

}  // namespace detail
}  // namespace posemb

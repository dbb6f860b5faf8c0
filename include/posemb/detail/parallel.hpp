// A small thread splitter for the tensor entry points that take posemb::Threads: threads
// started per call, or the tasks of a caller's pool (posemb::ParallelFor), sharing the work in
// pieces taken in order.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
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

// Each thread takes pieces of the work, in order, until none is left, rather than one fixed
// part: a thread that starts late (a pool thread woken from sleep, std::thread's start, a core
// taken by another job) then does less, instead of holding up the call while the others wait.
// Each piece is a contiguous run of the indices; a body call per piece.
inline constexpr int pieces_per_part = 4;

// Calls body(begin, end) on pieces of [0, count) (`pieces` equal runs, in order) until `next`,
// the next piece to take, passes the last.
template <class Body>
void take_pieces(Eigen::Index count, Eigen::Index pieces, std::atomic<Eigen::Index>& next,
                 const Body& body) {
  for (Eigen::Index piece = next.fetch_add(1, std::memory_order_relaxed); piece < pieces;
       piece = next.fetch_add(1, std::memory_order_relaxed)) {
    body(count * piece / pieces, count * (piece + 1) / pieces);
  }
}

// How many pieces `parts` threads share [0, count) in.
inline Eigen::Index pieces_for(Eigen::Index count, int parts) {
  return std::min<Eigen::Index>(count, Eigen::Index{parts} * pieces_per_part);
}

// Calls body(begin, end) on contiguous pieces covering [0, count) once, on `threads` threads:
// threads 1.. started here, thread 0 the calling thread. body must not throw. If a thread
// cannot be started, the others take its pieces.
template <class Body>
void parallel_for(Eigen::Index count, int threads, const Body& body) {
  threads = static_cast<int>(
      std::min<Eigen::Index>(std::max(threads, 1), std::max<Eigen::Index>(count, 1)));
  if (threads == 1) {
    body(Eigen::Index(0), count);
    return;
  }
  const Eigen::Index pieces = pieces_for(count, threads);
  std::atomic<Eigen::Index> next{0};
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(threads - 1));
  for (int thread = 1; thread < threads; ++thread) {
    try {
      workers.emplace_back([&] { take_pieces(count, pieces, next, body); });
    } catch (...) {  // std::system_error: no thread; the others take its pieces
      break;
    }
  }
  take_pieces(count, pieces, next, body);
  for (auto& worker : workers) worker.join();
}

// Calls body(begin, end) on contiguous pieces covering [0, count) once: as above without a
// pool; with threads.pool, on `parts` of its tasks (a single part runs on the calling thread).
template <class Body>
void parallel_for(Eigen::Index count, int parts, const Threads& threads, const Body& body) {
  parts = static_cast<int>(
      std::min<Eigen::Index>(std::max(parts, 1), std::max<Eigen::Index>(count, 1)));
  if (!threads.pool || parts == 1) {
    parallel_for(count, parts, body);
    return;
  }
  const Eigen::Index pieces = pieces_for(count, parts);
  std::atomic<Eigen::Index> next{0};
  threads.pool(static_cast<std::size_t>(parts),
               [&](std::size_t) { take_pieces(count, pieces, next, body); });
}

}  // namespace detail
}  // namespace posemb

// posemb's tensor entry points on the threads of a caller's Eigen::ThreadPoolDevice: a
// posemb::Threads whose pool hands the parts of the work to the device's threads, so that no
// thread is started per call.
//
// Eigen declares ThreadPoolDevice only when EIGEN_USE_THREADS is defined before its Tensor module
// is first included: the program that has a device has defined it (CMake:
// target_compile_definitions(app PRIVATE EIGEN_USE_THREADS)). This header does not need it: it
// uses the device's numThreads() and enqueueNoNotification() only, so including it anywhere is
// harmless.
//
// Example:
//   #define EIGEN_USE_THREADS   // before any Eigen or posemb include
//   Eigen::ThreadPool pool(4);
//   Eigen::ThreadPoolDevice device(&pool, 4);
//   const posemb::Threads threads = posemb::eigen_threads(device);
//   posemb::rotate(x, out, 0, table, posemb::RotateOptions().with_threads(threads));
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>

#include "posemb/tensor.hpp"

namespace posemb {

// Up to device.numThreads() parts: part 0 on the calling thread, the others queued on the
// device's pool; returns when all have finished. `device` (an Eigen::ThreadPoolDevice) must
// outlive the Threads. Not for a call made from inside one of the same pool's tasks (it would
// wait on its own pool).
template <class Device>
Threads eigen_threads(const Device& device) {
  const Device* pool = &device;
  ParallelFor run = [pool](std::size_t tasks, const std::function<void(std::size_t)>& task) {
    if (tasks == 0) return;
    std::mutex mutex;
    std::condition_variable finished;
    std::size_t pending = tasks - 1;
    for (std::size_t i = 1; i < tasks; ++i) {
      pool->enqueueNoNotification([&, i] {
        task(i);
        const std::lock_guard<std::mutex> lock(mutex);
        if (--pending == 0) finished.notify_one();
      });
    }
    task(0);
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return pending == 0; });
  };
  return Threads{device.numThreads(), std::move(run)};
}

}  // namespace posemb

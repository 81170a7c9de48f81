// Work the GUI thread hands to worker threads (loading, lowering, layout,
// plan layout, export) runs at a lower CPU priority than the GUI thread: on a
// machine with few cores, busy workers would otherwise share the cores evenly
// with the GUI thread, and every event it handles would take two or three
// times as long on the wall clock (bench_studio's GUI stalls).
#pragma once

#include <utility>

namespace lstudio::ui {

/// Lowers the calling thread's priority by 5 nice levels (on Linux nice is
/// per thread). Done once per thread; pool threads keep it.
void backgroundPriority();

/// `f`, run at background priority: QtConcurrent::run(inBackground(f), ...).
template <class F>
auto inBackground(F f) {
  return [f = std::move(f)](auto&&... args) mutable {
    backgroundPriority();
    return f(std::forward<decltype(args)>(args)...);
  };
}

}  // namespace lstudio::ui

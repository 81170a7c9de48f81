#include "ui/support/Background.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace lstudio::ui {

void backgroundPriority() {
  thread_local bool lowered = false;
  if (lowered) return;
  lowered = true;
  const id_t self = static_cast<id_t>(::gettid());
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, self);
  // Best effort: a thread that cannot be reniced simply keeps its priority.
  if (errno == 0 && nice < 19) (void)::setpriority(PRIO_PROCESS, self, nice + 5 > 19 ? 19 : nice + 5);
}

}  // namespace lstudio::ui
